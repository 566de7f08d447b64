//! `--generate`: pmcstat's reference (the man page and shell completions),
//! generated from the clap definitions in `cli.rs`, so that the options,
//! `--help`, the man page and the completions cannot disagree.

use crate::cli::Generate;
use clap_complete::Shell;
use std::io::Write;

/// Writes the reference `kind` to `out`.
pub fn write(kind: Generate, out: &mut impl Write) -> std::io::Result<()> {
    let mut cmd = crate::cli::command();
    let shell = match kind {
        Generate::Man => return clap_mangen::Man::new(cmd).render(out),
        Generate::Bash => Shell::Bash,
        Generate::Zsh => Shell::Zsh,
        Generate::Fish => Shell::Fish,
        Generate::Elvish => Shell::Elvish,
        Generate::Powershell => Shell::PowerShell,
    };
    clap_complete::generate(shell, &mut cmd, "pmcstat", out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The man page as text: roff's escaped hyphens (`\-`) as plain ones.
    fn man_text() -> String {
        let mut out = Vec::new();
        write(Generate::Man, &mut out).unwrap();
        String::from_utf8(out).unwrap().replace("\\-", "-")
    }

    /// Issue 22: the generated man page names every option pmcstat has
    /// (but the hidden `--generate`), long and short.
    #[test]
    fn man_page_names_every_option() {
        let man = man_text();
        assert!(
            man.starts_with(".ie") || man.contains(".TH pmcstat"),
            "{man}"
        );
        let cmd = crate::cli::command();
        let mut longs = 0;
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(l) = a.get_long() {
                longs += 1;
                assert!(man.contains(&format!("--{l}")), "the man page lacks --{l}");
            }
            if let Some(s) = a.get_short() {
                assert!(man.contains(&format!("-{s}")), "the man page lacks -{s}");
            }
        }
        // --event, --freq, --json, --metrics, ...: a sanity floor, not the count.
        assert!(longs >= 20, "only {longs} long options");
        assert!(
            !man.contains("--generate"),
            "the hidden --generate is in the man page"
        );
    }

    /// Every shell's completions offer the long options.
    #[test]
    fn completions_offer_the_options() {
        for kind in [Generate::Bash, Generate::Zsh, Generate::Fish] {
            let mut out = Vec::new();
            write(kind, &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            for l in ["call-graph", "json", "metrics", "all-cpus"] {
                assert!(text.contains(l), "{kind:?} completions lack --{l}");
            }
        }
    }
}

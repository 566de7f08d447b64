//! `pmcstat --generate`: the man page and shell completions, from the
//! binary as a packager runs it.

mod common;
use common::pmcstat;

/// The man page names the options `pmcstat --help` lists; the completions are
/// scripts for their shells; `--generate` takes nothing else.
#[test]
fn generate_writes_the_reference() {
    let (code, help, err) = pmcstat(&["--help"]);
    assert_eq!(code, 0, "{err}");
    let (code, man, err) = pmcstat(&["--generate", "man"]);
    assert_eq!(code, 0, "{err}");
    assert!(man.contains(".TH pmcstat"), "{man}");
    let man = man.replace("\\-", "-");
    // Every long option --help shows is in the man page.
    let longs: Vec<&str> = help
        .split(|c: char| c.is_whitespace() || c == ',' || c == '=' || c == '[' || c == ']')
        .filter(|w| w.starts_with("--") && w.len() > 2 && !w.contains('`'))
        .filter(|w| {
            w[2..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        .collect();
    assert!(longs.len() >= 20, "{longs:?}");
    for l in &longs {
        assert!(man.contains(l), "the man page lacks {l}");
    }
    assert!(!help.contains("--generate"), "--generate is hidden");
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef pmcstat"),
        ("fish", "complete -c pmcstat"),
    ] {
        let (code, out, err) = pmcstat(&["--generate", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(out.contains(marker), "{shell}: {out}");
        assert!(out.contains("json-report"), "{shell}: {out}");
    }
    let (code, _, err) = pmcstat(&["--generate", "man", "-p", "page-faults", "true"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = pmcstat(&["--generate", "troff"]);
    assert_eq!(code, 2, "{err}");
}

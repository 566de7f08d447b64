//! Small command-line tool over pmc-log files.
//!
//! ```text
//! cargo run -p pmc-log --example pmclog-tool -- dump FILE        # text, like pmcstat -R
//! cargo run -p pmc-log --example pmclog-tool -- json FILE        # JSON Lines
//! cargo run -p pmc-log --example pmclog-tool -- folded FILE      # folded stacks
//! cargo run -p pmc-log --example pmclog-tool -- perf FILE OUT    # perf.data
//! cargo run -p pmc-log --example pmclog-tool -- import HWPMC OUT # hwpmc log -> pmc-log
//! ```

use std::io::{self, Write};
use std::process::ExitCode;

use pmc_log::export::{folded::FoldedStacks, json, perf_data, text};

fn run(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let (cmd, file) = match args {
        [c, f, ..] => (c.as_str(), f),
        _ => return Err("usage: pmclog-tool dump|json|folded|perf|import FILE [OUT]".into()),
    };
    let data = std::fs::read(file)?;
    let stdout = io::stdout();
    let mut out = io::BufWriter::new(stdout.lock());
    if cmd == "import" {
        let dest = args.get(2).ok_or("import needs an output path")?;
        let (bytes, report) = pmc_log::hwpmc::convert(&data, Vec::new())?;
        std::fs::write(dest, bytes)?;
        eprintln!("{report:?}");
        return Ok(());
    }
    // Either format, by its magic: a FreeBSD hwpmc log is converted first.
    let log = pmc_log::open_any(&data)?;
    let reader = log.reader()?;
    let mut it = reader.records();
    match cmd {
        "dump" => {
            text::write_all(it.by_ref(), &mut out)?;
        }
        "json" => {
            json::write_all(it.by_ref(), &mut out)?;
        }
        "folded" => {
            let mut f = FoldedStacks::new();
            for r in it.by_ref() {
                f.add(&r);
            }
            f.write(&mut out)?;
        }
        "perf" => {
            let dest = args.get(2).ok_or("perf needs an output path")?;
            let header = reader.header().unwrap_or_default();
            let mut f = io::BufWriter::new(std::fs::File::create(dest)?);
            let n = perf_data::write_all(&header, it.by_ref(), &mut f)?;
            f.flush()?;
            eprintln!("{n} samples written to {dest}");
        }
        other => return Err(format!("unknown command {other:?}").into()),
    }
    out.flush()?;
    eprintln!("{}", it.report());
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

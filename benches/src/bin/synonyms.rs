//! Prints a common single-word WordNet synonym for each word read from
//! stdin (one per line, lowercase): `word<TAB>synonym`, or `word<TAB>` when
//! it has none. The memory harness (`benches/memory`) paraphrases its
//! questions with it, through the same lookup as `retrieval_quality`'s
//! synonyms set.
//!
//! ```text
//! printf 'car\nhappy\n' | synonyms [--wordnet /usr/share/wordnet]
//! ```

use std::io::{BufRead, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use memdb_benches::wordnet::WordNet;

#[derive(Parser)]
#[command(about = "WordNet synonyms of the words on stdin")]
struct Args {
    /// WordNet database directory (Debian's wordnet-base).
    #[arg(long, default_value = "/usr/share/wordnet")]
    wordnet: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let wn = WordNet::load(&args.wordnet)
        .with_context(|| format!("loading WordNet from {}", args.wordnet.display()))?;
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let word = line?.trim().to_lowercase();
        if word.is_empty() {
            continue;
        }
        let synonym = wn.synonym(&word).unwrap_or_default();
        writeln!(out, "{word}\t{synonym}")?;
    }
    out.flush()?;
    Ok(())
}

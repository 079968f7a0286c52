//! A small stderr progress bar: redrawn in place on a terminal, a line per 10% otherwise,
//! silent in `--json` mode.

use std::io::{IsTerminal, Write};

pub struct Bar {
    label: &'static str,
    quiet: bool,
    tty: bool,
    last_tenth: u64,
    drawn: bool,
}

impl Bar {
    pub fn new(label: &'static str, quiet: bool) -> Bar {
        Bar {
            label,
            quiet,
            tty: std::io::stderr().is_terminal(),
            last_tenth: u64::MAX,
            drawn: false,
        }
    }

    pub fn set(&mut self, done: u64, total: u64) {
        if self.quiet || total == 0 {
            return;
        }
        let pct = done * 100 / total;
        let mut e = std::io::stderr().lock();
        if self.tty {
            let filled = (pct / 4) as usize;
            let _ = write!(
                e,
                "\r{:<16} [{}{}] {pct:>3}%",
                self.label,
                "#".repeat(filled),
                " ".repeat(25 - filled)
            );
            self.drawn = true;
        } else if pct / 10 != self.last_tenth {
            self.last_tenth = pct / 10;
            let _ = writeln!(e, "{}: {pct}%", self.label);
        }
    }

    pub fn finish(&mut self) {
        if self.drawn {
            eprintln!();
            self.drawn = false;
        }
    }
}

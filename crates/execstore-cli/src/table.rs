//! A tiny column-aligned plain-text table.

use std::io::{self, Write};

/// Columns with a header and a maximum width each; rows of cells. Cells wider than their
/// column's maximum are cut with `…`; control characters in stored data are neutralized so a
/// value cannot break the layout or drive the terminal.
pub struct Table {
    headers: Vec<&'static str>,
    max: Vec<usize>,
    rows: Vec<Vec<String>>,
    /// Printed instead of a bare header when there are no rows.
    empty: Option<&'static str>,
}

impl Table {
    /// A table of `(header, max width)` columns; a max width of 0 never cuts.
    pub fn new(columns: &[(&'static str, usize)]) -> Self {
        Table {
            headers: columns.iter().map(|(h, _)| *h).collect(),
            max: columns.iter().map(|(_, m)| *m).collect(),
            rows: Vec::new(),
            empty: None,
        }
    }

    /// What to print instead of a bare header when no row is added (`"no runs"`): empty
    /// results say so.
    pub fn when_empty(mut self, line: &'static str) -> Self {
        self.empty = Some(line);
        self
    }

    /// Adds a row (missing cells are blank, extra cells are dropped).
    pub fn row(&mut self, cells: Vec<String>) {
        let mut cells: Vec<String> = cells
            .into_iter()
            .zip(&self.max)
            .map(|(cell, max)| fit(&clean(&cell), *max))
            .collect();
        cells.resize(self.headers.len(), String::new());
        self.rows.push(cells);
    }

    /// Writes the header and the rows, columns two spaces apart, no trailing blanks.
    pub fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        if let (true, Some(line)) = (self.rows.is_empty(), self.empty) {
            return writeln!(out, "{line}");
        }
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let header: Vec<String> = self.headers.iter().map(|h| h.to_string()).collect();
        for row in std::iter::once(&header).chain(&self.rows) {
            let mut line = String::new();
            for (i, (cell, w)) in row.iter().zip(&widths).enumerate() {
                if i > 0 {
                    line.push_str("  ");
                }
                line.push_str(cell);
                if i + 1 < row.len() {
                    line.extend(std::iter::repeat_n(' ', w - cell.chars().count()));
                }
            }
            writeln!(out, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// `s` with line breaks and tabs as spaces and other control characters as `�`.
pub fn clean(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\n' | '\r' | '\t' => ' ',
            c if c.is_control() => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// `s` cut to `max` characters, the last one `…` when cut (`max` 0: never cut).
pub fn fit(s: &str, max: usize) -> String {
    if max == 0 || s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_and_truncates() {
        let mut t = Table::new(&[("ID", 0), ("PATH", 8), ("N", 0)]);
        t.row(vec!["a".into(), "order.cart".into(), "1".into()]);
        t.row(vec!["bbbb".into(), "x\ny\u{1b}".into(), "22".into()]);
        let mut out = Vec::new();
        t.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text,
            "ID    PATH      N\n\
             a     order.c…  1\n\
             bbbb  x y\u{FFFD}      22\n"
        );
    }

    #[test]
    fn fit_counts_characters() {
        assert_eq!(fit("héllo", 5), "héllo");
        assert_eq!(fit("héllo!", 5), "héll…");
        assert_eq!(fit("anything", 0), "anything");
    }
}

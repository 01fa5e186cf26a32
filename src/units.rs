//! Figures for people: a rate with the SI prefix that shows it (`412 kb/s`, `3.17 Gb/s`).

/// `value` (in `unit`s per second, say) with an SI prefix chosen so that 1 ≤ shown < 1000, and
/// three significant digits: `si(412_000.0, "b/s")` is `412 kb/s`, `si(0.0, "b/s")` `0 b/s`.
pub fn si(value: f64, unit: &str) -> String {
    const PREFIXES: [(f64, &str); 5] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")];
    if !value.is_finite() || value == 0.0 {
        return format!("0 {unit}");
    }
    let (scale, prefix) = PREFIXES.iter().copied().find(|(s, _)| value.abs() >= *s).unwrap_or((1.0, ""));
    let shown = value / scale;
    let digits = if shown.abs() >= 100.0 {
        0
    } else if shown.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{shown:.digits$} {prefix}{unit}")
}

#[cfg(test)]
mod test {
    use super::si;

    #[test]
    fn prefixes_show_the_figure() {
        assert_eq!(si(412_000.0, "b/s"), "412 kb/s");
        assert_eq!(si(3_170_000_000.0, "b/s"), "3.17 Gb/s");
        assert_eq!(si(45_600.0, "contributions/s"), "45.6 kcontributions/s");
        assert_eq!(si(2.5, "b/s"), "2.50 b/s");
        assert_eq!(si(0.0, "b/s"), "0 b/s");
        assert_eq!(si(0.25, "b/s"), "0.25 b/s");
    }
}

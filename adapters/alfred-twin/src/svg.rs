//! A tiny SVG line-chart writer (no dependency): one chart, several named series, axes
//! with a few ticks, a legend.

use std::fmt::Write;

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Renders a chart of `(name, points)` series.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let (w, h) = (800.0, 420.0);
    let (l, r, t, b) = (70.0, 160.0, 40.0, 50.0);
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, 0.0f64, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y1) = (0.0, 1.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    let px = |x: f64| l + (x - x0) / (x1 - x0) * (w - l - r);
    let py = |y: f64| h - b - (y - y0) / (y1 - y0) * (h - t - b);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{}" y="22" font-size="15" text-anchor="middle">{}</text>
<line x1="{l}" y1="{}" x2="{}" y2="{}" stroke="black"/>
<line x1="{l}" y1="{t}" x2="{l}" y2="{}" stroke="black"/>
"#,
        (w - r + l) / 2.0,
        esc(title),
        h - b,
        w - r,
        h - b,
        h - b
    );
    for i in 0..=5 {
        let f = f64::from(i) / 5.0;
        let (xv, yv) = (x0 + f * (x1 - x0), y0 + f * (y1 - y0));
        let _ = writeln!(
            s,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><line x1="{l}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            px(xv),
            h - b + 16.0,
            fmt_num(xv),
            l - 6.0,
            py(yv) + 4.0,
            fmt_num(yv),
            py(yv),
            w - r,
            py(yv)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="16" y="{:.1}" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
        (w - r + l) / 2.0,
        h - 12.0,
        esc(x_label),
        (h - b + t) / 2.0,
        (h - b + t) / 2.0,
        esc(y_label)
    );
    for (k, (name, p)) in series.iter().enumerate() {
        let c = COLORS[k % COLORS.len()];
        let mut d = String::new();
        for &(x, y) in p {
            let _ = write!(d, "{:.1},{:.1} ", px(x), py(y));
        }
        let _ = writeln!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{}"/>"#,
            d.trim_end()
        );
        let ly = t + 10.0 + 18.0 * k as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="3"/><text x="{:.1}" y="{:.1}">{}</text>"#,
            w - r + 10.0,
            w - r + 30.0,
            w - r + 36.0,
            ly + 4.0,
            esc(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn fmt_num(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.trunc() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_a_polyline_per_series_and_escapes() {
        let s = line_chart(
            "a<b",
            "x",
            "y",
            &[
                ("one".into(), vec![(0.0, 1.0), (1.0, 2.0)]),
                ("two".into(), vec![(0.0, 0.0), (1.0, 3.0)]),
            ],
        );
        assert_eq!(s.matches("<polyline").count(), 2);
        assert!(s.contains("a&lt;b"));
        assert!(line_chart("e", "x", "y", &[]).starts_with("<svg"));
    }
}

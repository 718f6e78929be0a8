//! A small SVG line-chart writer for the twin's plots: time on x, one or more series on y,
//! solid or dashed, labelled axes with ticks, and a legend. No dependency.

use std::fmt::Write as _;

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stroke {
    /// A solid line.
    Solid,
    /// A dashed line (floors, limits).
    Dashed,
}

/// One series.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// Points `(x, y)`; a `None` y breaks the line.
    pub points: Vec<(f64, Option<f64>)>,
    /// Colour index.
    pub color: usize,
    /// Stroke.
    pub stroke: Stroke,
}

const PALETTE: [&str; 8] = [
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#999999",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A "nice" tick step for a span (1, 2 or 5 times a power of ten, about five ticks).
fn tick_step(span: f64) -> f64 {
    if span <= 0.0 || !span.is_finite() {
        return 1.0;
    }
    let raw = span / 5.0;
    let power = 10f64.powf(raw.log10().floor());
    let mantissa = raw / power;
    let nice = if mantissa <= 1.0 {
        1.0
    } else if mantissa <= 2.0 {
        2.0
    } else if mantissa <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * power
}

/// Renders a chart.
pub fn chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    const W: f64 = 860.0;
    const H: f64 = 400.0;
    const LEFT: f64 = 64.0;
    const RIGHT: f64 = 190.0;
    const TOP: f64 = 36.0;
    const BOTTOM: f64 = 48.0;
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().filter_map(|p| p.1));
    let x_max = xs.fold(1.0f64, f64::max);
    let y_max = ys.fold(0.0f64, f64::max).max(1e-9) * 1.05;
    let (x_step, y_step) = (tick_step(x_max), tick_step(y_max));
    let px = |x: f64| LEFT + x / x_max * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - y / y_max * (H - TOP - BOTTOM);
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" font-size="14" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        escape(title)
    );
    let mut x = 0.0;
    while x <= x_max + 1e-9 {
        let _ = writeln!(
            out,
            r##"<line x1="{0:.1}" y1="{1}" x2="{0:.1}" y2="{2}" stroke="#e5e5e5"/><text x="{0:.1}" y="{3}" text-anchor="middle">{4}</text>"##,
            px(x),
            TOP,
            H - BOTTOM,
            H - BOTTOM + 14.0,
            x
        );
        x += x_step;
    }
    let mut y = 0.0;
    while y <= y_max + 1e-9 {
        let _ = writeln!(
            out,
            r##"<line x1="{0}" y1="{1:.1}" x2="{2}" y2="{1:.1}" stroke="#e5e5e5"/><text x="{3}" y="{4:.1}" text-anchor="end">{5}</text>"##,
            LEFT,
            py(y),
            W - RIGHT,
            LEFT - 4.0,
            py(y) + 4.0,
            (y * 1000.0).round() / 1000.0
        );
        y += y_step;
    }
    let _ = writeln!(
        out,
        r#"<line x1="{LEFT}" y1="{0}" x2="{1}" y2="{0}" stroke="black"/><line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{0}" stroke="black"/>"#,
        H - BOTTOM,
        W - RIGHT
    );
    let _ = writeln!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - 10.0,
        escape(x_label)
    );
    let _ = writeln!(
        out,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (TOP + H - BOTTOM) / 2.0,
        escape(y_label)
    );
    for (k, s) in series.iter().enumerate() {
        let color = PALETTE[s.color % PALETTE.len()];
        let dash = match s.stroke {
            Stroke::Solid => "",
            Stroke::Dashed => r#" stroke-dasharray="5 3""#,
        };
        let mut path = String::new();
        let mut pen_down = false;
        for &(x, y) in &s.points {
            match y {
                Some(y) => {
                    let _ = write!(
                        path,
                        "{}{:.1},{:.1} ",
                        if pen_down { "L" } else { "M" },
                        px(x),
                        py(y)
                    );
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let _ = writeln!(
            out,
            r#"<path d="{}" fill="none" stroke="{color}" stroke-width="1.4"{dash}/>"#,
            path.trim_end()
        );
        let ly = TOP + 8.0 + 16.0 * k as f64;
        let lx = W - RIGHT + 12.0;
        let _ = writeln!(
            out,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/><text x="{}" y="{}">{}</text>"#,
            lx + 22.0,
            lx + 28.0,
            ly + 4.0,
            escape(&s.label)
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(tick_step(100.0), 20.0);
        assert_eq!(tick_step(360.0), 100.0);
        assert_eq!(tick_step(7.0), 2.0);
    }

    #[test]
    fn a_chart_has_its_labels_legend_and_a_broken_line() {
        let s = Series {
            label: "a <b>".into(),
            points: vec![(0.0, Some(1.0)), (1.0, None), (2.0, Some(2.0))],
            color: 0,
            stroke: Stroke::Dashed,
        };
        let svg = chart("T", "minutes", "replicas", &[s]);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains(">minutes</text>") && svg.contains(">replicas</text>"));
        assert!(svg.contains("a &lt;b&gt;"));
        assert_eq!(svg.matches(" M").count() + svg.matches("\"M").count(), 2);
        assert!(svg.contains("stroke-dasharray"));
    }
}

//! Charts as self-contained SVG text: line charts on linear or log axes
//! and bar charts with whiskers. Written here rather than with a plotting
//! crate: the report needs two chart kinds, no fonts or rasters, and
//! output that is plain text a test can parse.

use std::fmt::Write as _;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;
/// Vertical distance between legend entries.
const LEGEND_STEP: f64 = 15.0;
const COLORS: [&str; 12] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
    "#393b79", "#637939",
];

/// How a line chart tells apart series that share a color: each pass
/// through [`COLORS`] gets its own point marker and line pattern (the
/// suite has more mechanisms than there are colors that stay apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    Circle,
    Square,
    Diamond,
}

impl Look {
    fn of(color: usize) -> Look {
        match (color / COLORS.len()) % 3 {
            0 => Look::Circle,
            1 => Look::Square,
            _ => Look::Diamond,
        }
    }

    /// The line's dash pattern; a dashed series (a reference) keeps its
    /// dashes whatever its pass.
    fn dash(self, dashed: bool) -> &'static str {
        match (dashed, self) {
            (true, _) => r#" stroke-dasharray="6 4""#,
            (false, Look::Circle) => "",
            (false, Look::Square) => r#" stroke-dasharray="2 3""#,
            (false, Look::Diamond) => r#" stroke-dasharray="8 2 2 2""#,
        }
    }

    /// A marker centred on `(x, y)`; `inner` goes inside the element.
    fn marker(self, x: f64, y: f64, color: &str, class: &str, inner: &str) -> String {
        match self {
            Look::Circle => {
                format!(r#"<circle class="{class}" cx="{x:.1}" cy="{y:.1}" r="3" fill="{color}">{inner}</circle>"#)
            }
            Look::Square => format!(
                r#"<rect class="{class}" x="{:.1}" y="{:.1}" width="6" height="6" fill="{color}">{inner}</rect>"#,
                x - 3.0,
                y - 3.0
            ),
            Look::Diamond => format!(
                r#"<polygon class="{class}" points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="{color}">{inner}</polygon>"#,
                y - 4.0,
                x + 4.0,
                y + 4.0,
                x - 4.0
            ),
        }
    }
}

/// One line of a [`LineChart`].
#[derive(Clone, Debug)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// `(x, y)` points; drawn in x order.
    pub points: Vec<(f64, f64)>,
    /// Drawn dashed (a reference such as the ceiling).
    pub dashed: bool,
    /// Index into the palette, so a mechanism keeps its color from chart
    /// to chart.
    pub color: usize,
}

/// An axis: its label, scale and tick format.
#[derive(Clone, Copy, Debug)]
pub struct Axis {
    /// The label, with its unit.
    pub label: &'static str,
    /// Logarithmic (base 10) or linear.
    pub log: bool,
    /// How a tick value is written.
    pub format: fn(f64) -> String,
    /// Where the ticks go (those inside the data's range); empty: decades
    /// on a log axis, round steps on a linear one.
    pub ticks: &'static [f64],
}

/// A line chart: one series per mechanism.
#[derive(Clone, Debug)]
pub struct LineChart {
    /// The title above the plot.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The lines.
    pub series: Vec<Series>,
}

/// One bar of a [`BarChart`]: a value and an optional whisker up to `high`.
#[derive(Clone, Debug)]
pub struct Bar {
    /// Its label under the axis.
    pub label: String,
    /// The bar's height.
    pub value: f64,
    /// The whisker's top (e.g. a p99), if any.
    pub high: Option<f64>,
}

/// A bar chart on a linear axis from zero.
#[derive(Clone, Debug)]
pub struct BarChart {
    /// The title above the plot.
    pub title: String,
    /// The vertical axis label, with its unit.
    pub y_label: String,
    /// The bars, left to right.
    pub bars: Vec<Bar>,
}

/// Escapes text for XML content and attributes.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A scale from data to pixels.
struct Scale {
    log: bool,
    lo: f64,
    hi: f64,
    from: f64,
    to: f64,
}

impl Scale {
    fn new(log: bool, values: impl Iterator<Item = f64>, from: f64, to: f64) -> Scale {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && (!log || *v > 0.0)) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            (lo, hi) = (1.0, 10.0);
        }
        if log {
            (lo, hi) = (10f64.powf(lo.log10().floor()), 10f64.powf(hi.log10().ceil()));
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else {
            lo = lo.min(0.0);
            if hi <= lo {
                hi = lo + 1.0;
            }
            hi *= 1.05;
        }
        Scale { log, lo, hi, from, to }
    }

    fn at(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + t * (self.to - self.from)
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let (a, b) = (self.lo.log10().round() as i32, self.hi.log10().round() as i32);
            return (a..=b).map(|e| 10f64.powi(e)).collect();
        }
        let raw = (self.hi - self.lo) / 5.0;
        let mag = 10f64.powf(raw.log10().floor());
        let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(raw);
        let mut t = (self.lo / step).ceil() * step;
        let mut v = Vec::new();
        while t <= self.hi + step * 1e-9 {
            v.push(t);
            t += step;
        }
        v
    }
}

fn open(out: &mut String, title: &str) {
    open_tall(out, title, HEIGHT);
}

/// Opens a chart `height` tall: the plot keeps its place and size, the
/// extra room below it is for a legend longer than the plot.
fn open_tall(out: &mut String, title: &str, height: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="100%" height="100%" fill="white"/><text x="{cx}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
        t = escape(title),
        cx = WIDTH / 2.0
    );
}

/// Where the legend entry of series `i` sits, from the top.
fn legend_y(i: usize) -> f64 {
    TOP + 14.0 + LEGEND_STEP * i as f64
}

fn axes(out: &mut String, xs: &Scale, ys: &Scale, x: Option<&Axis>, y_label: &str, y_format: fn(f64) -> String) {
    let x_ticks = |x: &Axis| -> Vec<f64> {
        if x.ticks.is_empty() {
            xs.ticks()
        } else {
            x.ticks.iter().copied().filter(|t| *t >= xs.lo && *t <= xs.hi).collect()
        }
    };
    let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP);
    let _ = write!(out, r##"<g stroke="#333" fill="none"><path d="M{x0} {y1} V{y0} H{x1}"/></g>"##);
    for t in ys.ticks() {
        let py = ys.at(t);
        let _ = write!(
            out,
            r##"<line x1="{x0}" x2="{x1}" y1="{py:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" text-anchor="end">{l}</text>"##,
            tx = x0 - 6.0,
            ty = py + 4.0,
            l = escape(&y_format(t))
        );
    }
    if let Some(x) = x {
        for t in x_ticks(x) {
            let px = xs.at(t);
            let _ = write!(
                out,
                r##"<line x1="{px:.1}" x2="{px:.1}" y1="{y0}" y2="{y5}" stroke="#333"/><text x="{px:.1}" y="{ty}" text-anchor="middle">{l}</text>"##,
                y5 = y0 + 5.0,
                ty = y0 + 18.0,
                l = escape(&(x.format)(t))
            );
        }
        let _ = write!(
            out,
            r#"<text x="{cx}" y="{ly}" text-anchor="middle">{l}</text>"#,
            cx = (x0 + x1) / 2.0,
            ly = HEIGHT - 14.0,
            l = escape(x.label)
        );
    }
    let _ = write!(
        out,
        r#"<text transform="translate(18 {cy}) rotate(-90)" text-anchor="middle">{l}</text>"#,
        cy = (y0 + y1) / 2.0,
        l = escape(y_label)
    );
}

impl LineChart {
    /// The chart as an `<svg>` element.
    pub fn svg(&self) -> String {
        let all = || self.series.iter().flat_map(|s| s.points.iter().copied());
        let xs = Scale::new(self.x.log, all().map(|p| p.0), LEFT, WIDTH - RIGHT);
        let ys = Scale::new(self.y.log, all().map(|p| p.1), HEIGHT - BOTTOM, TOP);
        let mut out = String::new();
        // Every legend entry is drawn: a chart of many mechanisms grows
        // taller rather than cutting the last (often the ceilings) off.
        let legend_end = legend_y(self.series.len()) + 4.0;
        open_tall(&mut out, &self.title, HEIGHT.max(legend_end));
        axes(&mut out, &xs, &ys, Some(&self.x), self.y.label, self.y.format);
        for (i, s) in self.series.iter().enumerate() {
            let color = COLORS[s.color % COLORS.len()];
            let look = Look::of(s.color);
            let mut pts: Vec<(f64, f64)> = s
                .points
                .iter()
                .copied()
                .filter(|(x, y)| (!self.x.log || *x > 0.0) && (!self.y.log || *y > 0.0))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let path: Vec<String> = pts.iter().map(|&(x, y)| format!("{:.1},{:.1}", xs.at(x), ys.at(y))).collect();
            let dash = look.dash(s.dashed);
            let _ = write!(
                out,
                r#"<g class="series" data-name="{n}"><polyline points="{p}" fill="none" stroke="{color}" stroke-width="2"{dash}/>"#,
                n = escape(&s.name),
                p = path.join(" ")
            );
            for (x, y) in &pts {
                let title = format!("<title>{}: {}</title>", escape(&s.name), escape(&(self.y.format)(*y)));
                out.push_str(&look.marker(xs.at(*x), ys.at(*y), color, "point", &title));
            }
            let ly = legend_y(i);
            let lx = WIDTH - RIGHT + 14.0;
            let _ = write!(
                out,
                r#"<line x1="{lx}" x2="{lx2}" y1="{ly}" y2="{ly}" stroke="{color}" stroke-width="2"{dash}/>{m}<text x="{tx}" y="{ty}">{n}</text></g>"#,
                lx2 = lx + 22.0,
                m = look.marker(lx + 11.0, ly, color, "key", ""),
                tx = lx + 28.0,
                ty = ly + 4.0,
                n = escape(&s.name)
            );
        }
        out.push_str("</svg>");
        out
    }
}

impl BarChart {
    /// The chart as an `<svg>` element.
    pub fn svg(&self, format: fn(f64) -> String) -> String {
        let ys =
            Scale::new(false, self.bars.iter().flat_map(|b| [b.value, b.high.unwrap_or(0.0)]), HEIGHT - BOTTOM, TOP);
        let mut out = String::new();
        open(&mut out, &self.title);
        axes(&mut out, &ys, &ys, None, &self.y_label, format);
        let slot = (WIDTH - RIGHT - LEFT) / self.bars.len().max(1) as f64;
        for (i, b) in self.bars.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let x = LEFT + slot * i as f64 + slot * 0.15;
            let (top, base) = (ys.at(b.value), ys.at(0.0));
            let _ = write!(
                out,
                r#"<g class="bar" data-name="{n}"><rect x="{x:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="{color}"><title>{n}: {v}</title></rect>"#,
                n = escape(&b.label),
                w = slot * 0.7,
                h = (base - top).max(0.0),
                v = escape(&format(b.value))
            );
            if let Some(high) = b.high {
                let cx = x + slot * 0.35;
                let _ = write!(
                    out,
                    r##"<line x1="{cx:.1}" x2="{cx:.1}" y1="{top:.1}" y2="{hy:.1}" stroke="#000"/><line x1="{a:.1}" x2="{b:.1}" y1="{hy:.1}" y2="{hy:.1}" stroke="#000"/>"##,
                    hy = ys.at(high),
                    a = cx - 5.0,
                    b = cx + 5.0
                );
            }
            let _ = write!(
                out,
                r#"<text transform="translate({tx:.1} {ty}) rotate(35)" font-size="11">{n}</text></g>"#,
                tx = x + slot * 0.2,
                ty = HEIGHT - BOTTOM + 12.0,
                n = escape(&b.label)
            );
        }
        out.push_str("</svg>");
        out
    }
}

/// A square grid of values (a core-pair heatmap): darker is larger.
#[derive(Clone, Debug)]
pub struct Grid {
    /// The title above the grid.
    pub title: String,
    /// What the rows and columns are (e.g. `cpu`), with their labels.
    pub axis: &'static str,
    /// Row and column labels.
    pub labels: Vec<String>,
    /// `cells[row][column]`; `None` is not measured (drawn hatched grey).
    pub cells: Vec<Vec<Option<f64>>>,
}

impl Grid {
    /// The grid as an `<svg>` element.
    pub fn svg(&self, format: fn(f64) -> String) -> String {
        let n = self.labels.len().max(1);
        let cell = (280.0 / n as f64).clamp(14.0, 60.0);
        let (x0, y0) = (LEFT, TOP + 20.0);
        let (w, h) = (x0 + cell * n as f64 + 40.0, y0 + cell * n as f64 + 50.0);
        let values: Vec<f64> = self.cells.iter().flatten().flatten().copied().filter(|v| v.is_finite()).collect();
        let (lo, hi) = values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(*v), b.max(*v)));
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11"><title>{t}</title><rect width="100%" height="100%" fill="white"/><text x="{x0}" y="22" font-size="15" font-weight="bold">{t}</text>"#,
            t = escape(&self.title)
        );
        for (i, label) in self.labels.iter().enumerate() {
            let c = x0 + cell * (i as f64 + 0.5);
            let r = y0 + cell * (i as f64 + 0.5) + 4.0;
            let _ = write!(
                out,
                r#"<text x="{c:.1}" y="{ty:.1}" text-anchor="middle">{l}</text><text x="{tx:.1}" y="{r:.1}" text-anchor="end">{l}</text>"#,
                ty = y0 - 4.0,
                tx = x0 - 4.0,
                l = escape(label)
            );
        }
        for (r, row) in self.cells.iter().enumerate() {
            for (c, v) in row.iter().enumerate() {
                let (x, y) = (x0 + cell * c as f64, y0 + cell * r as f64);
                let (fill, label) = match v {
                    Some(v) if v.is_finite() => {
                        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
                        let shade = (235.0 - 180.0 * t) as u8;
                        (format!("rgb({shade},{shade},255)"), format(*v))
                    }
                    _ => ("#eee".to_string(), "-".to_string()),
                };
                let _ = write!(
                    out,
                    r##"<g class="cell"><rect x="{x:.1}" y="{y:.1}" width="{cell:.1}" height="{cell:.1}" fill="{fill}" stroke="#fff"/><text x="{cx:.1}" y="{cy:.1}" text-anchor="middle" font-size="10">{l}</text></g>"##,
                    cx = x + cell / 2.0,
                    cy = y + cell / 2.0 + 4.0,
                    l = escape(&label)
                );
            }
        }
        let _ = write!(
            out,
            r#"<text x="{x0}" y="{ly:.1}">{a} (rows and columns)</text></svg>"#,
            ly = y0 + cell * n as f64 + 20.0,
            a = escape(self.axis)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: f64) -> String {
        format!("{v}")
    }

    #[test]
    fn log_ticks_are_decades_and_points_fall_inside() {
        let c = LineChart {
            title: "t & <u>".into(),
            x: Axis { label: "size", log: true, format: plain, ticks: &[] },
            y: Axis { label: "rate", log: true, format: plain, ticks: &[] },
            series: vec![Series {
                name: "a".into(),
                points: vec![(64.0, 1e6), (65536.0, 1e4)],
                dashed: true,
                color: 0,
            }],
        };
        let s = c.svg();
        assert!(s.starts_with("<svg") && s.ends_with("</svg>"));
        assert!(s.contains("t &amp; &lt;u&gt;") && s.contains("stroke-dasharray"));
        assert_eq!(s.matches("class=\"point\"").count(), 2);
        let xs = Scale::new(true, [64.0, 65536.0].into_iter(), 0.0, 100.0);
        assert_eq!(xs.ticks(), vec![10.0, 100.0, 1000.0, 10000.0, 100000.0]);
        assert!(xs.at(64.0) > 0.0 && xs.at(65536.0) < 100.0);
    }

    #[test]
    fn series_sharing_a_color_differ_in_marker_and_line() {
        let series =
            |color: usize| Series { name: format!("m{color}"), points: vec![(1.0, 1.0)], dashed: false, color };
        let chart = |color: usize| {
            let c = LineChart {
                title: "t".into(),
                x: Axis { label: "x", log: false, format: plain, ticks: &[] },
                y: Axis { label: "y", log: false, format: plain, ticks: &[] },
                series: vec![series(color)],
            };
            c.svg()
        };
        let (first, second, third) = (chart(1), chart(1 + COLORS.len()), chart(1 + 2 * COLORS.len()));
        assert!(first.contains(COLORS[1]) && second.contains(COLORS[1]) && third.contains(COLORS[1]));
        // The point and its legend key share the series' look.
        assert!(first.contains("<circle class=\"point\"") && first.contains("<circle class=\"key\""));
        assert!(second.contains("<rect class=\"point\"") && second.contains("<rect class=\"key\""));
        assert!(third.contains("<polygon class=\"point\"") && third.contains("<polygon class=\"key\""));
        assert!(!first.contains("stroke-dasharray"));
        assert!(second.contains(r#"stroke-dasharray="2 3""#) && third.contains(r#"stroke-dasharray="8 2 2 2""#));
        let reference = Series { dashed: true, ..series(1 + COLORS.len()) };
        let many = LineChart {
            title: "t".into(),
            x: Axis { label: "x", log: false, format: plain, ticks: &[] },
            y: Axis { label: "y", log: false, format: plain, ticks: &[] },
            series: (0..40).map(series).collect(),
        }
        .svg();
        let height = legend_y(40) + 4.0;
        assert!(height > HEIGHT && many.contains(&format!(r#"height="{height}""#)), "the legend of 40 fits");
        assert_eq!(Look::of(reference.color).dash(reference.dashed), r#" stroke-dasharray="6 4""#);
    }

    #[test]
    fn grid_cells_and_unmeasured_ones() {
        let g = Grid {
            title: "pairs".into(),
            axis: "cpu",
            labels: vec!["0".into(), "1".into()],
            cells: vec![vec![None, Some(0.3)], vec![Some(0.3), None]],
        };
        let s = g.svg(plain);
        assert_eq!(s.matches("class=\"cell\"").count(), 4);
        assert_eq!(s.matches(">-</text>").count(), 2);
    }

    #[test]
    fn bars_have_whiskers_when_asked() {
        let b = BarChart {
            title: "x".into(),
            y_label: "us".into(),
            bars: vec![
                Bar { label: "a".into(), value: 1.0, high: Some(2.0) },
                Bar { label: "b".into(), value: 3.0, high: None },
            ],
        };
        let s = b.svg(plain);
        assert_eq!(s.matches("class=\"bar\"").count(), 2);
        assert_eq!(s.matches("stroke=\"#000\"").count(), 2);
    }
}

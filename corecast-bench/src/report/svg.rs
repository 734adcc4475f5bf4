//! Charts as self-contained SVG text: line charts on linear or log axes
//! and bar charts with whiskers. Written here rather than with a plotting
//! crate: the report needs two chart kinds, no fonts or rasters, and
//! output that is plain text a test can parse.

use std::fmt::Write as _;

use super::style::{Style, Weight};

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 400.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 190.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 56.0;
/// One line of a [`LineChart`].
#[derive(Clone, Debug)]
pub struct Series {
    /// Its label, written at the line's end.
    pub name: String,
    /// `(x, y)` points; drawn in x order.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
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
    /// When not empty, x is categorical: point `x = i` lies over the `i`th
    /// category, which names the tick (`x.format` is then unused).
    pub categories: Vec<Category>,
}

/// One place of a categorical x axis (the history's commits).
#[derive(Clone, Debug)]
pub struct Category {
    /// The tick's label.
    pub name: String,
    /// Marked in red with a shaded column (a commit with uncommitted changes).
    pub marked: bool,
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
    /// Its fill colour.
    pub color: &'static str,
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
/// extra room below it is for end labels or ticks that need more.
fn open_tall(out: &mut String, title: &str, height: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12"><title>{t}</title><rect width="100%" height="100%" fill="white"/><text x="{cx}" y="22" text-anchor="middle" font-size="15" font-weight="bold">{t}</text>"#,
        t = escape(title),
        cx = WIDTH / 2.0
    );
}

/// A tick of the x axis, in pixels.
struct Tick {
    px: f64,
    label: String,
    /// Red, with a shaded column behind it.
    marked: bool,
}

/// The x axis as drawn: its ticks, label and whether the tick labels are
/// slanted (long category names), which moves the label down.
struct XAxis {
    ticks: Vec<Tick>,
    label: &'static str,
    slanted: bool,
}

/// How much taller a chart with slanted x tick labels is.
const SLANT_ROOM: f64 = 50.0;

fn axes(out: &mut String, ys: &Scale, x: Option<&XAxis>, y_label: &str, y_format: fn(f64) -> String) {
    let (x0, x1, y0, y1) = (LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP);
    if let Some(x) = x {
        let band = x.ticks.windows(2).map(|w| w[1].px - w[0].px).fold(40.0, f64::min);
        for t in x.ticks.iter().filter(|t| t.marked) {
            let _ = write!(
                out,
                r##"<rect class="marked" x="{:.1}" y="{y1}" width="{band:.1}" height="{h}" fill="#fbe9e9"/>"##,
                t.px - band / 2.0,
                h = y0 - y1
            );
        }
    }
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
        for t in &x.ticks {
            let fill = if t.marked { r##" fill="#a33""## } else { "" };
            let text = if x.slanted {
                format!(
                    r#"<text transform="translate({:.1} {}) rotate(60)" font-size="11"{fill}>{}</text>"#,
                    t.px - 2.0,
                    y0 + 14.0,
                    escape(&t.label)
                )
            } else {
                format!(
                    r#"<text x="{:.1}" y="{}" text-anchor="middle"{fill}>{}</text>"#,
                    t.px,
                    y0 + 18.0,
                    escape(&t.label)
                )
            };
            let _ = write!(
                out,
                r##"<line x1="{px:.1}" x2="{px:.1}" y1="{y0}" y2="{y5}" stroke="#333"/>{text}"##,
                px = t.px,
                y5 = y0 + 5.0,
            );
        }
        let _ = write!(
            out,
            r#"<text x="{cx}" y="{ly}" text-anchor="middle">{l}</text>"#,
            cx = (x0 + x1) / 2.0,
            ly = HEIGHT - 14.0 + if x.slanted { SLANT_ROOM } else { 0.0 },
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

/// The colour of a muted line's end label.
const MUTED_TEXT: &str = "#777";

/// Vertical distance between end labels.
const LABEL_GAP: f64 = 12.0;

/// A line as drawn: its points in pixels, in x order, with their values.
struct Drawn<'a> {
    series: &'a Series,
    points: Vec<(f64, f64, f64, f64)>,
}

impl LineChart {
    /// The x axis's scale and ticks.
    fn x_axis(&self) -> (Scale, XAxis) {
        let (x0, x1) = (LEFT, WIDTH - RIGHT);
        if !self.categories.is_empty() {
            let n = self.categories.len() as f64;
            let xs = Scale { log: false, lo: -0.5, hi: n - 0.5, from: x0, to: x1 };
            // At most 30 tick labels (slanted, 15 px apart at the least):
            // the others are left unnamed, their points' titles name them.
            let every = self.categories.len().div_ceil(30);
            let ticks = self
                .categories
                .iter()
                .enumerate()
                .map(|(i, c)| Tick {
                    px: xs.at(i as f64),
                    label: if i % every == 0 { c.name.clone() } else { String::new() },
                    marked: c.marked,
                })
                .collect();
            return (xs, XAxis { ticks, label: self.x.label, slanted: true });
        }
        let xs = Scale::new(self.x.log, self.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)), x0, x1);
        let at: Vec<f64> = if self.x.ticks.is_empty() {
            xs.ticks()
        } else {
            self.x.ticks.iter().copied().filter(|t| *t >= xs.lo && *t <= xs.hi).collect()
        };
        let ticks = at.into_iter().map(|t| Tick { px: xs.at(t), label: (self.x.format)(t), marked: false }).collect();
        (xs, XAxis { ticks, label: self.x.label, slanted: false })
    }

    /// How point `x` is named in its hover title.
    fn x_name(&self, x: f64) -> String {
        match self.categories.get(x as usize) {
            Some(c) if !self.categories.is_empty() => c.name.clone(),
            _ => (self.x.format)(x),
        }
    }

    /// The chart as an `<svg>` element: every line, the strong ones on
    /// top, each named at its end (no legend); end labels that would
    /// overlap are moved apart, with a leader to their line.
    pub fn svg(&self) -> String {
        let (xs, x_axis) = self.x_axis();
        let ys =
            Scale::new(self.y.log, self.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)), HEIGHT - BOTTOM, TOP);
        let mut drawn: Vec<Drawn> = self
            .series
            .iter()
            .map(|s| {
                let mut pts: Vec<(f64, f64)> = s
                    .points
                    .iter()
                    .copied()
                    .filter(|(x, y)| x.is_finite() && y.is_finite())
                    .filter(|(x, y)| (!self.x.log || *x > 0.0) && (!self.y.log || *y > 0.0))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Drawn { series: s, points: pts.into_iter().map(|(x, y)| (xs.at(x), ys.at(y), x, y)).collect() }
            })
            .filter(|d| !d.points.is_empty())
            .collect();
        // Muted lines first, so the strong ones are drawn over them; of
        // equal weight, a dashed reference (the ceiling) under the others.
        drawn.sort_by_key(|d| (d.series.style.weight, !d.series.style.dashed));
        let wanted: Vec<f64> = drawn.iter().map(|d| d.points.last().map_or(0.0, |p| p.1)).collect();
        let label_y = super::labels::spread(&wanted, LABEL_GAP, TOP, HEIGHT - 8.0);
        let slant = if x_axis.slanted { SLANT_ROOM } else { 0.0 };
        let height = label_y.iter().map(|y| y + 8.0).fold(HEIGHT + slant, f64::max);
        let mut out = String::new();
        open_tall(&mut out, &self.title, height);
        axes(&mut out, &ys, Some(&x_axis), self.y.label, self.y.format);
        for (d, ly) in drawn.iter().zip(&label_y) {
            self.line(&mut out, d, *ly);
        }
        out.push_str("</svg>");
        out
    }

    /// One series: its line, points (with hover titles), leader and label.
    fn line(&self, out: &mut String, d: &Drawn, label_y: f64) {
        let Style { weight, color, dashed, marker } = d.series.style;
        let name = escape(&d.series.name);
        let dash = if dashed { r#" stroke-dasharray="7 4""# } else { "" };
        let path: Vec<String> = d.points.iter().map(|p| format!("{:.1},{:.1}", p.0, p.1)).collect();
        let _ = write!(
            out,
            r#"<g class="series {class}" data-name="{name}"><polyline class="line" points="{p}" fill="none" stroke="{color}" stroke-width="{w}"{dash}/>"#,
            class = weight.class(),
            p = path.join(" "),
            w = weight.width()
        );
        for &(px, py, x, y) in &d.points {
            let title = format!("<title>{name}, {}: {}</title>", escape(&self.x_name(x)), escape(&(self.y.format)(y)));
            out.push_str(&marker.draw(px, py, weight.marker_size(), color, &title));
        }
        let (end_x, end_y) = d.points.last().map_or((0.0, 0.0), |p| (p.0, p.1));
        let lx = WIDTH - RIGHT + 8.0;
        // A muted line's pale colour would make its name hard to read.
        let text = if weight == Weight::Muted { MUTED_TEXT } else { color };
        let _ = write!(
            out,
            r#"<polyline class="leader" points="{end_x:.1},{end_y:.1} {:.1},{label_y:.1}" fill="none" stroke="{color}" stroke-width="0.7" stroke-dasharray="1 2"/><text class="end-label" x="{lx}" y="{:.1}" fill="{text}" {font}>{name}</text></g>"#,
            lx - 3.0,
            label_y + 4.0,
            font = weight.label_font()
        );
    }
}

impl BarChart {
    /// The chart as an `<svg>` element.
    pub fn svg(&self, format: fn(f64) -> String) -> String {
        let ys =
            Scale::new(false, self.bars.iter().flat_map(|b| [b.value, b.high.unwrap_or(0.0)]), HEIGHT - BOTTOM, TOP);
        let mut out = String::new();
        open(&mut out, &self.title);
        axes(&mut out, &ys, None, &self.y_label, format);
        let slot = (WIDTH - RIGHT - LEFT) / self.bars.len().max(1) as f64;
        for (i, b) in self.bars.iter().enumerate() {
            let color = b.color;
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
    use crate::report::style::Marker;

    fn plain(v: f64) -> String {
        format!("{v}")
    }

    fn style(weight: Weight, dashed: bool) -> Style {
        Style { weight, color: "#123456", dashed, marker: Marker::Circle }
    }

    fn chart(series: Vec<Series>) -> LineChart {
        LineChart {
            title: "t".into(),
            x: Axis { label: "x", log: false, format: plain, ticks: &[] },
            y: Axis { label: "y", log: false, format: plain, ticks: &[] },
            series,
            categories: Vec::new(),
        }
    }

    /// The text of the series group named `name`, up to its end.
    fn group<'a>(svg: &'a str, name: &str) -> &'a str {
        let start = svg.find(&format!(r#"data-name="{name}""#)).expect("the series is drawn");
        let open = svg[..start].rfind("<g ").expect("its group");
        let end = svg[start..].find("</g>").expect("closed") + start;
        &svg[open..end]
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
                style: style(Weight::Strong, true),
            }],
            categories: Vec::new(),
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
    fn strong_lines_are_thick_and_drawn_last_muted_ones_thin_and_named_at_their_end() {
        let line = |name: &str, y: f64, weight: Weight, dashed: bool| Series {
            name: name.into(),
            points: vec![(1.0, y), (2.0, y)],
            style: style(weight, dashed),
        };
        let s = chart(vec![
            line("subject", 5.0, Weight::Strong, false),
            line("ceiling", 6.0, Weight::Strong, true),
            line("other", 5.0, Weight::Muted, false),
            line("peer", 2.0, Weight::Highlight, false),
        ])
        .svg();
        let subject = group(&s, "subject");
        assert!(subject.starts_with(r#"<g class="series strong""#) && subject.contains(r#"stroke-width="3.5""#));
        // The line itself, not its dotted leader to the label.
        let line_of = |g: &str| {
            let at = g.find(r#"<polyline class="line""#).expect("a line");
            g[at..at + g[at..].find("/>").unwrap()].to_string()
        };
        assert!(!line_of(subject).contains("stroke-dasharray"));
        assert!(line_of(group(&s, "ceiling")).contains(r#"stroke-dasharray="7 4""#));
        let other = group(&s, "other");
        assert!(other.starts_with(r#"<g class="series muted""#) && other.contains(r#"stroke-width="1""#));
        assert!(group(&s, "peer").starts_with(r#"<g class="series highlight""#));
        // Drawn in order of weight: the strong lines over the others.
        let at = |name: &str| s.find(&format!(r#"data-name="{name}""#)).unwrap();
        assert!(at("other") < at("peer") && at("peer") < at("subject"));
        // Each line is named at its end; there is no legend.
        assert_eq!(s.matches(r#"class="end-label""#).count(), 4);
        assert!(other.contains(">other</text>") && !s.contains(r#"class="key""#));
    }

    #[test]
    fn end_labels_of_lines_ending_together_do_not_overlap() {
        let series = (0..30)
            .map(|i| Series {
                name: format!("m{i}"),
                points: vec![(1.0, 1.0), (2.0, 1.0 + i as f64 * 1e-3)],
                style: style(Weight::Muted, false),
            })
            .collect();
        let s = chart(series).svg();
        let mut ys: Vec<f64> = s
            .split(r#"<text class="end-label""#)
            .skip(1)
            .map(|t| {
                let y = t.split(r#"y=""#).nth(1).unwrap();
                y[..y.find('"').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(ys.len(), 30);
        ys.sort_by(f64::total_cmp);
        assert!(ys.windows(2).all(|w| w[1] - w[0] >= LABEL_GAP - 0.1), "{ys:?}");
        let height: f64 = s.split(r#"height=""#).nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
        assert!(height >= ys[29], "the chart grows to hold every label");
    }

    #[test]
    fn categories_name_the_ticks_and_marked_ones_are_shaded() {
        let mut c = chart(vec![Series {
            name: "a".into(),
            points: vec![(0.0, 1.0), (1.0, 2.0)],
            style: style(Weight::Strong, false),
        }]);
        c.categories = vec![
            Category { name: "abc1234".into(), marked: false },
            Category { name: "def5678*".into(), marked: true },
        ];
        let s = c.svg();
        assert!(s.contains(">abc1234</text>") && s.contains(">def5678*</text>"));
        assert_eq!(s.matches(r#"class="marked""#).count(), 1);
        assert!(s.contains("<title>a, def5678*: 2</title>"), "a point's title names its commit");
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
                Bar { label: "a".into(), value: 1.0, high: Some(2.0), color: "#000" },
                Bar { label: "b".into(), value: 3.0, high: None, color: "#000" },
            ],
        };
        let s = b.svg(plain);
        assert_eq!(s.matches("class=\"bar\"").count(), 2);
        assert_eq!(s.matches("stroke=\"#000\"").count(), 2);
    }
}

//! How a chart's line is drawn: its weight (strong, highlighted, muted),
//! colour, dashes and point shape.

/// How strongly a line is drawn. A chart's few lines a reader looks for
/// first are strong or highlighted and drawn last (on top); the rest are
/// thin and muted. Ordered as drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Weight {
    /// Thin and pale: there for context.
    Muted,
    /// Coloured and of middle width: worth a look.
    Highlight,
    /// Thick and saturated: what the chart is about.
    Strong,
}

impl Weight {
    /// The class of the series' group, for styling and tests.
    pub fn class(self) -> &'static str {
        match self {
            Weight::Muted => "muted",
            Weight::Highlight => "highlight",
            Weight::Strong => "strong",
        }
    }

    /// The line's width in pixels.
    pub fn width(self) -> f64 {
        match self {
            Weight::Muted => 1.0,
            Weight::Highlight => 2.5,
            Weight::Strong => 3.5,
        }
    }

    pub(super) fn marker_size(self) -> f64 {
        match self {
            Weight::Muted => 2.0,
            Weight::Highlight => 3.0,
            Weight::Strong => 4.0,
        }
    }

    /// The end label's font attributes.
    pub(super) fn label_font(self) -> &'static str {
        match self {
            Weight::Muted => r#"font-size="10""#,
            Weight::Highlight => r#"font-size="12" font-weight="bold""#,
            Weight::Strong => r#"font-size="13" font-weight="bold""#,
        }
    }
}

/// The shape of a line's points: what tells apart lines of one colour (in
/// the history, one mechanism measured on several machines).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A disc.
    Circle,
    /// A square.
    Square,
    /// A diamond.
    Diamond,
}

impl Marker {
    /// The `i`th shape, round robin.
    pub fn nth(i: usize) -> Marker {
        [Marker::Circle, Marker::Square, Marker::Diamond][i % 3]
    }

    /// A marker of half-width `r` centred on `(x, y)`; `inner` goes inside.
    pub(super) fn draw(self, x: f64, y: f64, r: f64, color: &str, inner: &str) -> String {
        match self {
            Marker::Circle => {
                format!(r#"<circle class="point" cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{color}">{inner}</circle>"#)
            }
            Marker::Square => format!(
                r#"<rect class="point" x="{:.1}" y="{:.1}" width="{w}" height="{w}" fill="{color}">{inner}</rect>"#,
                x - r,
                y - r,
                w = 2.0 * r
            ),
            Marker::Diamond => format!(
                r#"<polygon class="point" points="{x:.1},{:.1} {:.1},{y:.1} {x:.1},{:.1} {:.1},{y:.1}" fill="{color}">{inner}</polygon>"#,
                y - r - 1.0,
                x + r + 1.0,
                y + r + 1.0,
                x - r - 1.0
            ),
        }
    }
}

/// How one line is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// How strongly.
    pub weight: Weight,
    /// Its colour (any SVG colour).
    pub color: &'static str,
    /// Dashed (a reference such as the ceiling).
    pub dashed: bool,
    /// Its points' shape.
    pub marker: Marker,
}

//! What every HTML page of the report shares: the head with its style
//! sheet (inline: the pages fetch nothing) and the end.

use super::svg::escape;

/// The page's start, up to and including its `<h1>`.
pub fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;max-width:1100px;margin:2em auto;color:#222}}table{{border-collapse:collapse}}\
         td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}th:first-child,td:first-child{{text-align:left}}\
         .missing{{color:#a33}}figure{{margin:1em 0}}figcaption{{max-width:720px;margin-top:.3em;font-size:.95em}}\
         details{{margin:.3em 0 1em}}summary{{cursor:pointer;color:#555}}</style></head><body><h1>{t}</h1>",
        t = escape(title)
    )
}

/// The page's end.
pub const END: &str = "</body></html>\n";

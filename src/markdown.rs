//! Messages as Markdown, safely. This is the only code that puts markup into the page
//! (`inner_html`), so it owns the rules:
//! - raw HTML in a message (blocks and inline) is shown as text, never parsed;
//! - a link keeps its target only when it is absolute `http`, `https` or `mailto`, and it
//!   opens in a new tab with no opener or referrer; any other link shows its text only;
//! - an image is never fetched (nothing leaves the machine unasked): it shows as its alt
//!   text and address;
//! - a fenced or indented code block is `<pre><code>` (with `language-…` from the fence)
//!   inside a `.code-block` that has a Copy button.
//!
//! Everything else (text, code, attribute values) is escaped by pulldown-cmark's HTML
//! writer or by `escape` here.

use pulldown_cmark::{html, CowStr, Event, Options, Parser, Tag, TagEnd};

/// The HTML for `text`.
pub fn to_html(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Per open link: whether it became an anchor. Per open image: its address.
    let mut links: Vec<bool> = Vec::new();
    let mut images: Vec<String> = Vec::new();
    let events = Parser::new_ext(text, opts).flat_map(|ev| -> Vec<Event<'_>> {
        match ev {
            Event::Html(s) | Event::InlineHtml(s) => vec![Event::Text(s)],
            Event::Start(Tag::Link { dest_url, .. }) => {
                let safe = safe_url(&dest_url);
                links.push(safe);
                if safe {
                    vec![Event::InlineHtml(CowStr::from(format!(
                        "<a href=\"{}\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">",
                        escape(&dest_url)
                    )))]
                } else {
                    vec![]
                }
            }
            Event::End(TagEnd::Link) => {
                if links.pop().unwrap_or(false) {
                    vec![Event::InlineHtml("</a>".into())]
                } else {
                    vec![]
                }
            }
            Event::Start(Tag::Image { dest_url, .. }) => {
                images.push(dest_url.to_string());
                vec![Event::InlineHtml(
                    "<span class=\"image-ref\">[image: ".into(),
                )]
            }
            Event::End(TagEnd::Image) => {
                let url = images.pop().unwrap_or_default();
                vec![Event::InlineHtml(CowStr::from(format!(
                    "] {}</span>",
                    escape(&url)
                )))]
            }
            Event::Start(Tag::CodeBlock(kind)) => vec![
                Event::Html(
                    "<div class=\"code-block\"><button type=\"button\" class=\"copy-code\" \
                     aria-label=\"Copy code\">Copy</button>"
                        .into(),
                ),
                Event::Start(Tag::CodeBlock(kind)),
            ],
            Event::End(TagEnd::CodeBlock) => {
                vec![Event::End(TagEnd::CodeBlock), Event::Html("</div>".into())]
            }
            other => vec![other],
        }
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// Absolute http(s) and mailto addresses only: no `javascript:`, `data:` or
/// page-relative targets.
fn safe_url(url: &str) -> bool {
    let u = url.trim().to_ascii_lowercase();
    (u.starts_with("https://") || u.starts_with("http://") || u.starts_with("mailto:"))
        && !u
            .chars()
            .any(|c| c.is_control() || c == '"' || c == '<' || c == '>')
}

/// Text for HTML text or a double-quoted attribute.
fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::to_html;

    #[test]
    fn raw_html_is_text() {
        let h = to_html("<script>alert(1)</script>\n\nhi <img src=x onerror=alert(1)> there");
        assert!(!h.contains("<script") && !h.contains("<img"), "{h}");
        assert!(
            h.contains("&lt;script&gt;") && h.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{h}"
        );
    }

    #[test]
    fn links_keep_only_safe_targets() {
        let h = to_html("[a](https://example.com/?q=1&r=2) [b](javascript:alert(1)) [c](page.html) [d](<https://x.org/\"onmouseover=\">)");
        assert_eq!(
            h,
            "<p><a href=\"https://example.com/?q=1&amp;r=2\" target=\"_blank\" rel=\"noopener noreferrer nofollow\">a</a> b c d</p>\n"
        );
    }

    #[test]
    fn images_are_not_fetched() {
        let h = to_html("![a cat](https://example.com/cat.png)");
        assert!(!h.contains("<img"), "{h}");
        assert!(
            h.contains("[image: a cat] https://example.com/cat.png"),
            "{h}"
        );
    }

    #[test]
    fn code_blocks_get_a_copy_button() {
        let h = to_html("```python\nprint(\"<hi>\")\n```");
        assert!(h.contains("<div class=\"code-block\"><button"), "{h}");
        assert!(
            h.contains(
                "<pre><code class=\"language-python\">print(\"&lt;hi&gt;\")\n</code></pre>\n</div>"
            ),
            "{h}"
        );
    }
}

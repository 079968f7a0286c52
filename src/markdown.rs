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

use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, Options, Parser, Tag, TagEnd};

/// The HTML for `text`.
pub fn to_html(text: &str) -> String {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // Per open link: whether it became an anchor. Per open image: its address.
    let mut links: Vec<bool> = Vec::new();
    let mut images: Vec<String> = Vec::new();
    // Inside a code block: its language and its text so far.
    let mut code: Option<(String, String)> = None;
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
            Event::Start(Tag::CodeBlock(kind)) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                code = Some((lang, String::new()));
                vec![Event::Html(
                    "<div class=\"code-block\"><button type=\"button\" class=\"copy-code\" \
                     aria-label=\"Copy code\">Copy</button>"
                        .into(),
                )]
            }
            Event::Text(t) if code.is_some() => {
                if let Some((_, buf)) = code.as_mut() {
                    buf.push_str(&t);
                }
                vec![]
            }
            Event::End(TagEnd::CodeBlock) => {
                let (lang, buf) = code.take().unwrap_or_default();
                vec![Event::Html(CowStr::from(code_block(&lang, &buf)))]
            }
            other => vec![other],
        }
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// A code block's `<pre><code>`, its text highlighted when the fence names a language
/// `oxidoc_highlight` knows (which escapes everything it emits), escaped otherwise.
fn code_block(lang: &str, text: &str) -> String {
    let body = if oxidoc_highlight::is_supported(lang) {
        oxidoc_highlight::highlight(text, lang)
    } else {
        escape(text)
    };
    let class = if lang.is_empty() {
        String::new()
    } else {
        format!(" class=\"language-{}\"", escape(lang))
    };
    format!("<pre><code{class}>{body}</code></pre>\n</div>")
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
    fn code_blocks_get_a_copy_button_and_highlighting() {
        let h = to_html("```python\nprint(\"<hi>\")  # <img onerror=x>\n```");
        assert!(h.contains("<div class=\"code-block\"><button"), "{h}");
        assert!(h.starts_with("<div class=\"code-block\">"), "{h}");
        assert!(h.contains("<pre><code class=\"language-python\">"), "{h}");
        assert!(
            h.contains("<span class=\"tok-comment\"># &lt;img onerror=x&gt;</span>"),
            "{h}"
        );
        assert!(h.contains("&quot;&lt;hi&gt;&quot;"), "{h}");
        assert!(!h.contains("<img") && !h.contains("<hi>"), "{h}");
        assert!(h.ends_with("</code></pre>\n</div>"), "{h}");
    }

    #[test]
    fn unknown_and_missing_languages_are_escaped_text() {
        let h = to_html("```klingon\n<b>qapla'</b>\n```\n\n    <i>indented</i>\n");
        assert!(h.contains("<pre><code class=\"language-klingon\">&lt;b&gt;qapla&#39;&lt;/b&gt;\n</code></pre>"), "{h}");
        assert!(
            h.contains("<pre><code>&lt;i&gt;indented&lt;/i&gt;\n</code></pre>"),
            "{h}"
        );
        let h = to_html("```\"><script>\nx\n```");
        assert!(!h.contains("<script"), "{h}");
    }
}

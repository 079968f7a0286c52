//! A scrolling panel that keeps its newest content in view while the reader is at
//! its bottom: the transcript and the token console.

use leptos::prelude::*;

/// Whether a panel follows its bottom, and where following last put it.
#[derive(Clone, Copy)]
pub struct Follow {
    on: StoredValue<bool>,
    /// The scrollTop following last set. Content that arrives between that scroll and
    /// its event lengthens the panel under it, so only a move above it is the reader's.
    placed: StoredValue<f64>,
    scheduled: StoredValue<bool>,
}

impl Follow {
    /// Follow `panel`: after the changes `changed` tracks, once a frame and while the
    /// reader is at the bottom, scroll it to `bottom(panel)`. Not once per change:
    /// setting scrollTop lays the page out there and then, which for every token took
    /// the page's main thread about 3.5 ms (SmolLM2, Zen 4), beside the worker's
    /// threads on the same cores.
    pub fn new(
        panel: impl Fn() -> Option<web_sys::Element> + Copy + 'static,
        changed: impl Fn() + 'static,
        bottom: impl Fn(&web_sys::Element) -> f64 + Copy + 'static,
    ) -> Follow {
        let f = Follow {
            on: StoredValue::new(true),
            placed: StoredValue::new(0.0),
            scheduled: StoredValue::new(false),
        };
        Effect::new(move |_| {
            changed();
            if !f.on.get_value() || f.scheduled.get_value() {
                return;
            }
            f.scheduled.set_value(true);
            request_animation_frame(move || {
                f.scheduled.set_value(false);
                if let Some(el) = panel().filter(|_| f.on.get_value()) {
                    let to = bottom(&el).max(0.0);
                    el.set_scroll_top(to as i32);
                    f.placed.set_value(to);
                }
            });
        });
        f
    }

    /// Follow again, wherever the reader was (a new turn starts).
    pub fn resume(self) {
        self.on.set_value(true);
    }

    /// The reader scrolled `el`: following holds while they are within `slack` pixels
    /// of the bottom, or not above where following put them. Returns the new scrollTop.
    pub fn scrolled(self, el: &web_sys::Element, slack: f64) -> f64 {
        let top = el.scroll_top() as f64;
        let at_bottom = top + el.client_height() as f64 >= el.scroll_height() as f64 - slack;
        let kept = self.on.get_value() && top >= self.placed.get_value() - 1.0;
        self.on.set_value(at_bottom || kept);
        top
    }
}

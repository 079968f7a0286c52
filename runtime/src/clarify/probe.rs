//! The clarify probe: a linear read of the model's own residual stream at the end of
//! the prompt, which decides where the rules (`rules.rs`) are silent.
//!
//! Why: the rules fire on about 70% of the underspecified prompts of an author they
//! were not written against, and a judge from the model's yes/no logits separated
//! underspecified prompts from clear ones with an area under the curve of only
//! 0.65–0.74. The residual stream of the prompt's last position (the assistant
//! opener, after which the reply begins) separates them far better: fitted on all
//! authors' sets but one and read on that one, 0.97–0.99 (docs/behaviour.md, "The
//! clarify probe"). The model knows when a request leaves something out; its first
//! tokens often answer anyway.
//!
//! A probe belongs to one model: it is fitted (`fit`, `slm eval probe`) on the hidden
//! states of one conversion and carried in that conversion's manifest
//! (`Manifest::clarify_probe`, `slm convert --clarify-probe`), which refuses a probe
//! fitted on other source bytes or another `--quant`.
//!
//! Invariants: `weights` has `hidden_size` values and `slot_weights` `ALL_SLOTS.len()`
//! rows of them; every value is finite; `layer` < the model's layers (`validate`).

use serde::{Deserialize, Serialize};

use super::{Slot, ALL_SLOTS};
use crate::error::{Result, SlmError};
use crate::model::config::ModelConfig;

/// A fitted probe, as the manifest carries it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClarifyProbe {
    /// The residual stream is read after this layer (0-based) at the prompt's last
    /// position.
    pub layer: usize,
    /// [hidden] weights on the raw residual stream (the fit's standardization is
    /// folded in), and the bias: the margin is `weights · h + bias`.
    pub weights: Vec<f32>,
    pub bias: f32,
    /// The probe fires at a margin at or above this.
    pub threshold: f32,
    /// Under this margin the probe overrules the rules where they fire (but never on
    /// live data, which no model can answer whatever it reads): the level only 1% of
    /// the underspecified prompts the rules fire on fall under, each read by a probe
    /// fitted without its set. The rules' false fires on new authors' controls sit
    /// far below it (docs/behaviour.md). At most `threshold`.
    pub veto: f32,
    /// [slots, hidden] one-against-the-rest weights that name the missing piece, in
    /// `ALL_SLOTS` order, and their biases.
    pub slot_weights: Vec<f32>,
    pub slot_bias: Vec<f32>,
    pub fit: ProbeFit,
}

/// Where a probe came from and how it did on prompts it was not fitted on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeFit {
    /// SHA-256 of each source file of the conversion it was fitted on
    /// (`Provenance::source_files`), and that conversion's `--quant`.
    pub source_sha256: Vec<String>,
    pub quant: String,
    /// The sets, each a group of the cross-validation (one author each).
    pub sets: Vec<FitSet>,
    /// The threshold is this quantile of the controls' margins, each read by a probe
    /// fitted without that control's set.
    pub control_quantile: f32,
    /// The veto is this quantile of the margins (above or below each fold's own
    /// threshold) of the underspecified prompts the rules fire on, read held out.
    pub veto_quantile: f32,
    /// Each set read by a probe fitted on the other sets (its threshold chosen on
    /// those alone): how the probe does on an author it has not seen.
    pub held_out: Vec<HeldOut>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FitSet {
    pub path: String,
    pub sha256: String,
    pub underspecified: usize,
    pub controls: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldOut {
    pub set: String,
    /// Underspecified prompts the held-out probe fired on, of `underspecified`.
    pub fired: usize,
    pub underspecified: usize,
    /// Controls it fired on, of `controls`.
    pub false_fires: usize,
    pub controls: usize,
    /// The slot head's first slot is one the set names as missing, of the
    /// underspecified prompts.
    pub slot_right: usize,
    /// As the policy decides, the rules (unless vetoed) or else the probe:
    /// underspecified prompts and controls it fires on.
    pub fired_with_rules: usize,
    pub false_fires_with_rules: usize,
}

/// A probe's reading of one prompt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    pub layer: usize,
    pub margin: f32,
    pub threshold: f32,
    pub veto: f32,
    /// Every slot with its margin, highest first.
    pub slots: Vec<(Slot, f32)>,
}

impl Reading {
    pub fn fires(&self) -> bool {
        self.margin >= self.threshold
    }

    /// Whether the probe overrules a rule that fired (`ClarifyProbe::veto`).
    pub fn vetoes(&self) -> bool {
        self.margin < self.veto
    }

    /// The pieces the probe names: the first slot, and a second whose own head
    /// fires too (margin above 0).
    pub fn named_slots(&self) -> Vec<Slot> {
        let mut v: Vec<Slot> = self.slots.iter().take(1).map(|s| s.0).collect();
        if let Some(&(s, m)) = self.slots.get(1) {
            if m > 0.0 {
                v.push(s);
            }
        }
        v
    }
}

impl ClarifyProbe {
    /// Refuse a probe that does not fit `cfg`, naming the field.
    pub fn validate(&self, cfg: &ModelConfig) -> Result<()> {
        let bad = |field: &str, why: String| {
            Err(SlmError::malformed(
                ".slm manifest",
                format!("clarify_probe.{field}: {why}"),
            ))
        };
        let h = cfg.hidden_size;
        if self.layer >= cfg.num_layers {
            return bad(
                "layer",
                format!(
                    "{} is not below the model's {} layers",
                    self.layer, cfg.num_layers
                ),
            );
        }
        if self.weights.len() != h {
            return bad(
                "weights",
                format!("{} values, the hidden size is {h}", self.weights.len()),
            );
        }
        if self.slot_weights.len() != h * ALL_SLOTS.len() {
            return bad(
                "slot_weights",
                format!(
                    "{} values, expected {} slots × {h}",
                    self.slot_weights.len(),
                    ALL_SLOTS.len()
                ),
            );
        }
        if self.slot_bias.len() != ALL_SLOTS.len() {
            return bad(
                "slot_bias",
                format!(
                    "{} values, expected {}",
                    self.slot_bias.len(),
                    ALL_SLOTS.len()
                ),
            );
        }
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        for (name, ok) in [
            ("weights", finite(&self.weights)),
            ("bias", self.bias.is_finite()),
            ("threshold", self.threshold.is_finite()),
            ("veto", self.veto.is_finite()),
            ("slot_weights", finite(&self.slot_weights)),
            ("slot_bias", finite(&self.slot_bias)),
        ] {
            if !ok {
                return bad(name, "holds a value that is not a finite number".into());
            }
        }
        if self.veto > self.threshold {
            return bad(
                "veto",
                format!("{} is above the threshold {}", self.veto, self.threshold),
            );
        }
        Ok(())
    }

    /// Refuse to attach this probe to a conversion of other bytes: its margins are
    /// those of the hidden states it was fitted on.
    pub fn check_source(&self, source_sha256: &[String], quant: &str) -> Result<()> {
        if self.fit.source_sha256 != source_sha256 || self.fit.quant != quant {
            return Err(SlmError::Invalid(format!(
                "clarify_probe.fit: fitted on source {:?} converted with --quant {}, but this conversion is of {:?} with --quant {quant}; a probe reads one conversion's hidden states",
                self.fit.source_sha256, self.fit.quant, source_sha256
            )));
        }
        Ok(())
    }

    /// Read `hidden` ([layers, hidden_size], `Scratch::hidden`).
    pub fn read(&self, hidden: &[f32]) -> Reading {
        let h = self.weights.len();
        let x = &hidden[self.layer * h..(self.layer + 1) * h];
        let mut slots: Vec<(Slot, f32)> = ALL_SLOTS
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                (
                    s,
                    dot(&self.slot_weights[i * h..(i + 1) * h], x) + self.slot_bias[i],
                )
            })
            .collect();
        slots.sort_by(|a, b| b.1.total_cmp(&a.1));
        Reading {
            layer: self.layer,
            margin: dot(&self.weights, x) + self.bias,
            threshold: self.threshold,
            veto: self.veto,
            slots,
        }
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    // f64 sums: the same margin on every target and path.
    a.iter()
        .zip(b)
        .map(|(x, y)| *x as f64 * *y as f64)
        .sum::<f64>() as f32
}

// ---------------------------------------------------------------------------------
// Fitting: L2-regularized logistic regression, full batch, Adam, fixed steps.

/// One prompt's row for the fit.
pub struct Example {
    /// The residual stream at the probe's layer.
    pub x: Vec<f32>,
    pub underspecified: bool,
    /// The slots its set names as missing.
    pub missing: Vec<Slot>,
    /// Its set (a cross-validation group).
    pub group: usize,
    /// Whether the rules fire on it (`clarify::assess`), and with a decision the veto
    /// never sets aside (`clarify::vetoable`).
    pub rules_fire: bool,
    pub rules_kept: bool,
}

/// The fit's settings. The defaults are the ones docs/behaviour.md measured.
#[derive(Clone, Copy, Debug)]
pub struct FitSettings {
    pub l2: f64,
    pub steps: usize,
    pub rate: f64,
    pub control_quantile: f64,
    pub veto_quantile: f64,
}

impl Default for FitSettings {
    fn default() -> Self {
        FitSettings {
            l2: 1e-2,
            steps: 600,
            rate: 1e-2,
            control_quantile: 0.97,
            veto_quantile: 0.01,
        }
    }
}

/// A linear read on raw features: `w · x + b`.
struct Linear {
    w: Vec<f64>,
    b: f64,
}

impl Linear {
    fn at(&self, x: &[f32]) -> f64 {
        self.w
            .iter()
            .zip(x)
            .map(|(w, x)| w * *x as f64)
            .sum::<f64>()
            + self.b
    }
}

/// Logistic regression of `y` on the rows `rows` of `ex`, standardized, then folded
/// back onto the raw features.
fn logistic(ex: &[Example], rows: &[usize], y: &[f64], s: &FitSettings) -> Linear {
    let h = ex[rows[0]].x.len();
    let n = rows.len() as f64;
    let mut mu = vec![0f64; h];
    let mut sd = vec![0f64; h];
    for &r in rows {
        for (m, v) in mu.iter_mut().zip(&ex[r].x) {
            *m += *v as f64;
        }
    }
    mu.iter_mut().for_each(|m| *m /= n);
    for &r in rows {
        for ((q, v), m) in sd.iter_mut().zip(&ex[r].x).zip(&mu) {
            *q += (*v as f64 - m).powi(2);
        }
    }
    sd.iter_mut().for_each(|q| *q = (*q / n).sqrt() + 1e-6);
    let z: Vec<Vec<f64>> = rows
        .iter()
        .map(|&r| {
            ex[r]
                .x
                .iter()
                .zip(&mu)
                .zip(&sd)
                .map(|((v, m), q)| (*v as f64 - m) / q)
                .collect()
        })
        .collect();
    let (mut w, mut b) = (vec![0f64; h], 0f64);
    let (mut m1, mut v1, mut mb, mut vb) = (vec![0f64; h], vec![0f64; h], 0f64, 0f64);
    let mut g = vec![0f64; h];
    for t in 1..=s.steps {
        g.iter_mut().for_each(|x| *x = 0.0);
        let mut gb = 0.0;
        for (zi, yi) in z.iter().zip(y) {
            let m: f64 = zi.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>() + b;
            let e = 1.0 / (1.0 + (-m).exp()) - yi;
            gb += e;
            for (gj, zj) in g.iter_mut().zip(zi) {
                *gj += e * zj;
            }
        }
        let (c1, c2) = (1.0 - 0.9f64.powi(t as i32), 1.0 - 0.999f64.powi(t as i32));
        for j in 0..h {
            let gj = g[j] / n + s.l2 * w[j];
            m1[j] = 0.9 * m1[j] + 0.1 * gj;
            v1[j] = 0.999 * v1[j] + 0.001 * gj * gj;
            w[j] -= s.rate * (m1[j] / c1) / ((v1[j] / c2).sqrt() + 1e-8);
        }
        let gb = gb / n;
        mb = 0.9 * mb + 0.1 * gb;
        vb = 0.999 * vb + 0.001 * gb * gb;
        b -= s.rate * (mb / c1) / ((vb / c2).sqrt() + 1e-8);
    }
    let raw: Vec<f64> = w.iter().zip(&sd).map(|(w, q)| w / q).collect();
    let b = b - raw.iter().zip(&mu).map(|(w, m)| w * m).sum::<f64>();
    Linear { w: raw, b }
}

fn label(ex: &[Example], rows: &[usize]) -> Vec<f64> {
    rows.iter()
        .map(|&r| ex[r].underspecified as u8 as f64)
        .collect()
}

/// The `q` quantile (nearest rank above) of `v`.
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let i = ((v.len() as f64 - 1.0) * q).ceil() as usize;
    v[i.min(v.len() - 1)]
}

/// Margins of each group's controls, each read by a probe fitted without that group,
/// over the groups in `groups`.
fn held_out_control_margins(ex: &[Example], groups: &[usize], s: &FitSettings) -> Vec<f64> {
    let mut out = Vec::new();
    for &g in groups {
        let train: Vec<usize> = (0..ex.len())
            .filter(|&i| ex[i].group != g && groups.contains(&ex[i].group))
            .collect();
        let lin = logistic(ex, &train, &label(ex, &train), s);
        out.extend(
            ex.iter()
                .filter(|e| e.group == g && !e.underspecified)
                .map(|e| lin.at(&e.x)),
        );
    }
    out
}

/// One-against-the-rest slot heads on the underspecified rows of `rows`.
fn slot_heads(ex: &[Example], rows: &[usize], s: &FitSettings) -> Vec<Linear> {
    let under: Vec<usize> = rows
        .iter()
        .copied()
        .filter(|&r| ex[r].underspecified)
        .collect();
    ALL_SLOTS
        .iter()
        .map(|slot| {
            let y: Vec<f64> = under
                .iter()
                .map(|&r| ex[r].missing.contains(slot) as u8 as f64)
                .collect();
            logistic(ex, &under, &y, s)
        })
        .collect()
}

fn first_slot(heads: &[Linear], x: &[f32]) -> Slot {
    let (i, _) = heads
        .iter()
        .enumerate()
        .map(|(i, l)| (i, l.at(x)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("slots");
    ALL_SLOTS[i]
}

/// Fit a probe on `ex` (rows of `layer`), with each set held out in turn to measure
/// it (`ProbeFit::held_out`). `sets` names the groups in order; `progress` is told
/// each step. Needs at least two groups, each with controls.
pub fn fit(
    ex: &[Example],
    layer: usize,
    sets: Vec<FitSet>,
    source_sha256: Vec<String>,
    quant: String,
    s: &FitSettings,
    progress: &mut dyn FnMut(&str),
) -> Result<ClarifyProbe> {
    let groups: Vec<usize> = (0..sets.len()).collect();
    if groups.len() < 2 {
        return Err(SlmError::Invalid(
            "a probe is fitted on two sets or more: each is held out in turn to measure it".into(),
        ));
    }
    for &g in &groups {
        let (u, c) = ex
            .iter()
            .filter(|e| e.group == g)
            .fold((0, 0), |(u, c), e| {
                (
                    u + e.underspecified as usize,
                    c + !e.underspecified as usize,
                )
            });
        if u == 0 || c == 0 {
            return Err(SlmError::Invalid(format!(
                "{}: a set needs underspecified prompts and controls ({u} and {c})",
                sets[g].path
            )));
        }
    }
    // Each set read by a probe fitted on the others, with its threshold chosen on
    // those alone: every prompt's margin above or below its fold's threshold.
    let mut rel = vec![0f64; ex.len()];
    let mut first = vec![Slot::Text; ex.len()];
    for &g in &groups {
        progress(&format!("holding out {}", sets[g].path));
        let others: Vec<usize> = groups.iter().copied().filter(|&o| o != g).collect();
        let train: Vec<usize> = (0..ex.len()).filter(|&i| ex[i].group != g).collect();
        let lin = logistic(ex, &train, &label(ex, &train), s);
        let thr = match others.len() {
            1 => quantile(
                train
                    .iter()
                    .filter(|&&i| !ex[i].underspecified)
                    .map(|&i| lin.at(&ex[i].x))
                    .collect(),
                s.control_quantile,
            ),
            _ => quantile(held_out_control_margins(ex, &others, s), s.control_quantile),
        };
        let heads = slot_heads(ex, &train, s);
        for i in (0..ex.len()).filter(|&i| ex[i].group == g) {
            rel[i] = lin.at(&ex[i].x) - thr;
            first[i] = first_slot(&heads, &ex[i].x);
        }
    }
    // The veto level over the given groups' rules-fired underspecified prompts.
    let veto_over = |gs: &[usize]| {
        let v: Vec<f64> = (0..ex.len())
            .filter(|&i| gs.contains(&ex[i].group) && ex[i].underspecified && ex[i].rules_fire)
            .map(|i| rel[i])
            .collect();
        match v.is_empty() {
            true => f64::NEG_INFINITY,
            false => quantile(v, s.veto_quantile).min(0.0),
        }
    };
    let mut held_out = Vec::new();
    for &g in &groups {
        let others: Vec<usize> = groups.iter().copied().filter(|&o| o != g).collect();
        let veto = veto_over(&others);
        let test: Vec<usize> = (0..ex.len()).filter(|&i| ex[i].group == g).collect();
        let fired = |i: usize| rel[i] >= 0.0;
        let either =
            |i: usize| (ex[i].rules_fire && (rel[i] >= veto || ex[i].rules_kept)) || fired(i);
        let count = |f: &dyn Fn(usize) -> bool| test.iter().filter(|&&i| f(i)).count();
        held_out.push(HeldOut {
            set: sets[g].path.clone(),
            fired: count(&|i| ex[i].underspecified && fired(i)),
            underspecified: count(&|i| ex[i].underspecified),
            false_fires: count(&|i| !ex[i].underspecified && fired(i)),
            controls: count(&|i| !ex[i].underspecified),
            slot_right: count(&|i| ex[i].underspecified && ex[i].missing.contains(&first[i])),
            fired_with_rules: count(&|i| ex[i].underspecified && either(i)),
            false_fires_with_rules: count(&|i| !ex[i].underspecified && either(i)),
        });
    }
    progress("fitting on every set");
    let all: Vec<usize> = (0..ex.len()).collect();
    let lin = logistic(ex, &all, &label(ex, &all), s);
    let threshold = quantile(held_out_control_margins(ex, &groups, s), s.control_quantile);
    let veto = threshold + veto_over(&groups).max(-1e30);
    let heads = slot_heads(ex, &all, s);
    Ok(ClarifyProbe {
        layer,
        weights: lin.w.iter().map(|&w| w as f32).collect(),
        bias: lin.b as f32,
        threshold: threshold as f32,
        veto: veto as f32,
        slot_weights: heads
            .iter()
            .flat_map(|l| l.w.iter().map(|&w| w as f32))
            .collect(),
        slot_bias: heads.iter().map(|l| l.b as f32).collect(),
        fit: ProbeFit {
            source_sha256,
            quant,
            sets,
            control_quantile: s.control_quantile as f32,
            veto_quantile: s.veto_quantile as f32,
            held_out,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(hidden: usize, layers: usize) -> ModelConfig {
        ModelConfig {
            architecture: crate::model::config::Architecture::Llama,
            vocab_size: 10,
            hidden_size: hidden,
            intermediate_size: 4,
            num_layers: layers,
            num_heads: 1,
            num_kv_heads: 1,
            head_dim: hidden,
            max_position_embeddings: 16,
            rms_norm_eps: 1e-5,
            rope_theta: 1e4,
            rope_scaling: None,
            tie_word_embeddings: true,
            attention_bias: false,
        }
    }

    /// hidden 2, read after layer 1; slot heads all zero but `Location` (x0) and
    /// `Quantity` (x1).
    fn probe() -> ClarifyProbe {
        let mut slot_weights = vec![0.0; 2 * ALL_SLOTS.len()];
        let at = |s: Slot| ALL_SLOTS.iter().position(|&x| x == s).unwrap();
        slot_weights[at(Slot::Location) * 2] = 1.0;
        slot_weights[at(Slot::Quantity) * 2 + 1] = 1.0;
        ClarifyProbe {
            layer: 1,
            weights: vec![1.0, -1.0],
            bias: 0.5,
            threshold: 0.0,
            veto: -1.0,
            slot_weights,
            slot_bias: vec![-0.5; ALL_SLOTS.len()],
            fit: ProbeFit {
                source_sha256: vec!["ab".into()],
                quant: "keep".into(),
                sets: Vec::new(),
                control_quantile: 0.97,
                veto_quantile: 0.01,
                held_out: Vec::new(),
            },
        }
    }

    #[test]
    fn a_reading_is_the_dot_product_at_its_layer() {
        let p = probe();
        // Layer 0 is ignored; layer 1 holds (2, 1): margin 2 - 1 + 0.5 = 1.5.
        let r = p.read(&[9.0, 9.0, 2.0, 1.0]);
        assert_eq!(r.margin, 1.5);
        assert!(r.fires());
        // Location 2 - 0.5 = 1.5 first, Quantity 1 - 0.5 = 0.5 second (its head
        // fires too), then the rest at -0.5.
        assert_eq!(r.slots[0], (Slot::Location, 1.5));
        assert_eq!(r.slots[1], (Slot::Quantity, 0.5));
        assert_eq!(r.named_slots(), vec![Slot::Location, Slot::Quantity]);
        // (1, 2): margin -0.5, under the threshold; Quantity 1.5 first, Location
        // 0.5 second.
        let r = p.read(&[0.0, 0.0, 1.0, 2.0]);
        assert_eq!(r.margin, -0.5);
        assert!(!r.fires());
        assert!(!r.vetoes(), "-0.5 is not under the veto -1");
        assert!(p.read(&[0.0, 0.0, 0.0, 2.0]).vetoes());
        // (0, 0.2): only Quantity... at -0.3, still first; the second is not named.
        let r = p.read(&[0.0, 0.0, 0.0, 0.2]);
        assert_eq!(r.named_slots().len(), 1);
    }

    #[test]
    fn a_probe_that_does_not_fit_the_model_is_refused_by_field() {
        let c = cfg(2, 2);
        assert!(probe().validate(&c).is_ok());
        let field = |p: ClarifyProbe| p.validate(&c).unwrap_err().to_string();
        let mut p = probe();
        p.layer = 2;
        assert!(field(p).contains("clarify_probe.layer"));
        let mut p = probe();
        p.weights.push(0.0);
        assert!(field(p).contains("clarify_probe.weights"));
        let mut p = probe();
        p.slot_weights.pop();
        assert!(field(p).contains("clarify_probe.slot_weights"));
        let mut p = probe();
        p.slot_bias.pop();
        assert!(field(p).contains("clarify_probe.slot_bias"));
        let mut p = probe();
        p.weights[1] = f32::NAN;
        assert!(field(p).contains("clarify_probe.weights"));
        let mut p = probe();
        p.threshold = f32::INFINITY;
        assert!(field(p).contains("clarify_probe.threshold"));
        let mut p = probe();
        p.veto = 0.5;
        assert!(field(p).contains("clarify_probe.veto: 0.5 is above the threshold 0"));
        let p = probe();
        assert!(p.check_source(&["ab".into()], "keep").is_ok());
        let e = p
            .check_source(&["cd".into()], "keep")
            .unwrap_err()
            .to_string();
        assert!(e.contains("clarify_probe.fit"), "{e}");
        assert!(p.check_source(&["ab".into()], "q8_0").is_err());
    }

    /// Three sets of prompts whose first feature says whether they are
    /// underspecified (+1 or -1, with a little of the second feature's noise) and
    /// whose third says the slot (+1 location, -1 quantity): the fit separates them,
    /// held out or not, and names the slot.
    #[test]
    fn the_fit_separates_a_separable_set_and_measures_it_held_out() {
        let mut ex = Vec::new();
        for g in 0..3 {
            for i in 0..12 {
                let u = i % 3 != 0;
                let noise = ((g * 12 + i) as f32 * 0.37).sin();
                let slot = if i % 2 == 0 {
                    Slot::Location
                } else {
                    Slot::Quantity
                };
                let sign = if slot == Slot::Location { 1.0 } else { -1.0 };
                ex.push(Example {
                    x: vec![if u { 1.0 } else { -1.0 } + 0.2 * noise, noise, sign],
                    underspecified: u,
                    missing: if u { vec![slot] } else { Vec::new() },
                    group: g,
                    rules_fire: g == 0 && i == 0,
                    rules_kept: false,
                });
            }
        }
        let sets = (0..3)
            .map(|g| FitSet {
                path: format!("set{g}"),
                sha256: String::new(),
                underspecified: 8,
                controls: 4,
            })
            .collect();
        let s = FitSettings {
            steps: 200,
            ..FitSettings::default()
        };
        let p = fit(
            &ex,
            4,
            sets,
            vec!["ab".into()],
            "keep".into(),
            &s,
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(p.layer, 4);
        assert_eq!(p.weights.len(), 3);
        assert!(p.weights[0] > 0.0, "{:?}", p.weights);
        for h in &p.fit.held_out {
            assert_eq!((h.fired, h.underspecified), (8, 8), "{h:?}");
            assert_eq!((h.false_fires, h.controls), (0, 4), "{h:?}");
            assert_eq!(h.slot_right, 8, "{h:?}");
        }
        // The rules fired on set0's first prompt, a control.
        assert_eq!(p.fit.held_out[0].false_fires_with_rules, 1);
        assert_eq!(p.fit.held_out[1].false_fires_with_rules, 0);
        // The final probe, read at its layer of a 5-layer stack of 3 values.
        let at = |x: [f32; 3]| {
            let mut hidden = vec![0.0; 15];
            hidden[12..].copy_from_slice(&x);
            p.read(&hidden)
        };
        let r = at([1.0, 0.0, -1.0]);
        assert!(r.fires());
        assert_eq!(r.named_slots()[0], Slot::Quantity);
        assert!(!at([-1.0, 0.0, 1.0]).fires());
        // One set is not enough to hold one out.
        let one = vec![FitSet {
            path: "set0".into(),
            sha256: String::new(),
            underspecified: 8,
            controls: 4,
        }];
        let few: Vec<Example> = ex.into_iter().filter(|e| e.group == 0).collect();
        assert!(fit(&few, 0, one, Vec::new(), String::new(), &s, &mut |_| {}).is_err());
    }
}

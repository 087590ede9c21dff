//! What the bench prints: one JSON object per line per scenario ([`Row::json`]), then the
//! Markdown table of every row, the server's limits, and each row's targets (PASS/MISS).

use serde_json::{Map, Value as Json, json};

use crate::Bench;

const IMPL: &str = "redisson-lock";

/// One scenario's result: the common columns, its extra JSON fields, and the lines of its
/// targets (printed under "Targets:" in row order; not part of the JSON).
pub struct Row {
    pub scenario: String,
    pub tasks: Option<usize>,
    pub ops_per_s: Option<f64>,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    pub ratio: Option<f64>,
    pub ratio_to: String,
    pub extra: Map<String, Json>,
    pub notes: String,
    pub targets: Vec<String>,
}

impl Row {
    pub fn new(scenario: &str) -> Row {
        Row {
            scenario: scenario.to_owned(),
            tasks: None,
            ops_per_s: None,
            p50_us: None,
            p99_us: None,
            ratio: None,
            ratio_to: String::new(),
            extra: Map::new(),
            notes: String::new(),
            targets: Vec::new(),
        }
    }

    pub fn json(&self) -> Json {
        let mut map = Map::new();
        map.insert("impl".into(), json!(IMPL));
        map.insert("scenario".into(), json!(self.scenario));
        map.insert("ops_per_s".into(), json!(self.ops_per_s.map(round1)));
        map.insert("p50_us".into(), json!(self.p50_us.map(round1)));
        map.insert("p99_us".into(), json!(self.p99_us.map(round1)));
        if let Some(tasks) = self.tasks {
            map.insert("tasks".into(), json!(tasks));
        }
        map.insert("ratio".into(), json!(self.ratio.map(round3)));
        map.insert("ratio_to".into(), json!(self.ratio_to));
        for (k, v) in &self.extra {
            map.insert(k.clone(), v.clone());
        }
        Json::Object(map)
    }

    pub fn set(&mut self, key: &str, value: Json) {
        self.extra.insert(key.to_owned(), value);
    }

    /// An extra field as a number (NaN when absent).
    pub fn f64(&self, key: &str) -> f64 {
        self.extra
            .get(key)
            .and_then(Json::as_f64)
            .unwrap_or(f64::NAN)
    }

    /// An extra field as a flag (false when absent).
    pub fn flag(&self, key: &str) -> bool {
        self.extra.get(key).and_then(Json::as_bool).unwrap_or(false)
    }

    /// A target line: `PASS text` or `MISS text`.
    pub fn target(&mut self, ok: bool, text: String) {
        self.targets.push(format!("{} {text}", verdict(ok)));
    }

    /// A target on a number: the verdict from `value` against `bound`, the line from
    /// `text(value, target)` with the value as [`judged`] prints it (`digits` decimals or
    /// more) and the target as `≤ 3` (`≥`, `<`), so that the line and its verdict agree.
    pub fn bound(
        &mut self,
        value: f64,
        digits: usize,
        bound: Bound,
        text: impl FnOnce(&str, &str) -> String,
    ) {
        let (ok, sign, limit) = match bound {
            Bound::AtMost(limit) => (value <= limit, "≤", limit),
            Bound::AtLeast(limit) => (value >= limit, "≥", limit),
            Bound::Below(limit) => (value < limit, "<", limit),
        };
        let target = format!("{sign} {}", fmt_limit(limit));
        self.target(ok, text(&judged(value, digits, limit), &target));
    }

    /// A line under "Targets:" that is no verdict (`n/a ...`, `info ...`).
    pub fn target_note(&mut self, text: String) {
        self.targets.push(text);
    }
}

/// What a target number must be: at most, at least, or below a limit.
#[derive(Clone, Copy)]
pub enum Bound {
    AtMost(f64),
    AtLeast(f64),
    Below(f64),
}

pub fn verdict(ok: bool) -> &'static str {
    if ok { "PASS" } else { "MISS" }
}

pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

pub fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// `x` as a target line prints it: `digits` decimals, or more where fewer would round it
/// onto `limit` or past it (3.004 against "≤ 3" prints as 3.004, not 3.00), so that the
/// printed number and the PASS/MISS beside it agree.
fn judged(x: f64, digits: usize, limit: f64) -> String {
    let side = x.partial_cmp(&limit);
    (digits..=9)
        .map(|d| format!("{x:.d$}"))
        .find(|s| s.parse::<f64>().ok().and_then(|p| p.partial_cmp(&limit)) == side)
        .unwrap_or_else(|| format!("{x}"))
}

/// A target's limit: at most 3 decimals, trailing zeros dropped (14.05, 33.333, 2).
fn fmt_limit(limit: f64) -> String {
    let s = format!("{limit:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

pub fn fmt_opt(x: Option<f64>, digits: usize) -> String {
    match x {
        Some(x) if x.abs() >= 1000.0 => format!("{:.0}", x),
        Some(x) => format!("{x:.digits$}"),
        None => "–".into(),
    }
}

/// The results table, the server limits, and the targets.
pub fn print(bench: &Bench) {
    println!();
    println!("| scenario | tasks | ops/s | p50 µs | p99 µs | ratio | ratio to | notes |");
    println!("|---|---:|---:|---:|---:|---:|---|---|");
    for r in &bench.rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            r.scenario,
            r.tasks.map_or("–".into(), |t| t.to_string()),
            fmt_opt(r.ops_per_s, 0),
            fmt_opt(r.p50_us, 0),
            fmt_opt(r.p99_us, 0),
            fmt_opt(r.ratio, 2),
            r.ratio_to,
            r.notes
        );
    }
    let limits = &bench.limits;
    println!();
    println!("Server limits (same run):");
    println!("| limit | value |");
    println!("|---|---:|");
    println!(
        "| PING round trip p50, interleaved with lock pairs (fred, 1 task) | {} µs |",
        fmt_opt(bench.interleaved_ping, 0)
    );
    println!(
        "| PING round trip p50 / p99, back to back (fred, 1 task) | {} / {} µs |",
        fmt_opt(limits.ping_p50_us, 0),
        fmt_opt(limits.ping_p99_us, 0)
    );
    println!(
        "| redis-benchmark PING_MBULK -c 1 | {} req/s |",
        fmt_opt(limits.ping_mbulk_c1, 0)
    );
    println!(
        "| redis-benchmark PING_MBULK -c 50 | {} req/s |",
        fmt_opt(limits.ping_mbulk_c50, 0)
    );
    println!(
        "| redis-benchmark EVALSHA acquire -c 1 | {} req/s |",
        fmt_opt(limits.evalsha_c1, 0)
    );
    println!(
        "| redis-benchmark EVALSHA acquire -c 50 | {} req/s |",
        fmt_opt(limits.evalsha_c50, 0)
    );
    println!(
        "| redis-benchmark EVALSHA acquire -c 50 -P 16 | {} req/s |",
        fmt_opt(limits.evalsha_c50_p16, 0)
    );

    println!();
    println!("Targets:");
    for line in bench.rows.iter().flat_map(|r| &r.targets) {
        println!("{line}");
    }
}

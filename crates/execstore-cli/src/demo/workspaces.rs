//! The demo's workspace story: an on-call team's reflexr workspaces, written through
//! [`WorkspaceStorage`] calls the way reflexr's engine would write them, in reflexr 0.1.1's
//! JSON shapes (so reflexr reads the file back).
//!
//! Two tenants, four workspaces. Monitoring sources append service errors, deploys and
//! heartbeats; stored rules fire runs (paging on severe errors, ordered and blocking per
//! service; deploy announcements; heartbeat-gap checks, ordered per service); a successful
//! page appends `oncall:page_sent` caused by its run, which fires an incident run whose
//! `oncall:incident_opened` is caused in turn (a causal chain two runs deep). The last minutes
//! hold runs in every status: pending and due, pending behind an earlier run of its scope
//! (a dead page of a blocking rule, a running heartbeat check), retrying (due and not yet),
//! running under a held lease and under a lapsed one, dead, cancelled, skipped, succeeded.
//! Dead letters, leases held and lapsed, consumer cursors behind the head, schedule ticks,
//! rule progress, and a stored rule in three versions beside an archived one.
//!
//! Times are the wall clock minus offsets, and every other draw comes from the seed: the same
//! seed writes the same story apart from the clock.

use std::time::Duration;

use execstore::workspace::{
    run_lease, Entry, EvaluationError, ManualClock, NewRun, RuleProgress, Run, RunStatus, StoredRule,
    StoredRuleStatus, Timestamp, WorkspaceRef, WorkspaceStorage, WorkspaceTx, RULE_ARCHIVED, RULE_INSTALLED,
};
use execstore::{executions::JsonObject, Result, StoreError};
use fastrand::Rng;
use serde_json::{json, Value};

use super::plan::{hex_id, pick, uniform, HOUR, MINUTE};

/// The rule that pages on severe errors: ordered per service, and a dead page blocks its
/// service's later pages (reflexr's `ordering="scope"`, `on_dead_letter="block"`).
pub const PAGE: &str = "oncall:page";
/// Announces deploys: unordered.
pub const ANNOUNCE: &str = "oncall:announce-deploy";
/// Checks slow heartbeats: ordered per service, not blocking.
pub const HEARTBEAT: &str = "oncall:heartbeat-gap";
/// The retired SMS pager: archived.
pub const LEGACY: &str = "oncall:legacy-sms";
/// Opens an incident when a page went out (a rule defined in code, not stored).
pub const INCIDENT: &str = "oncall:open-incident";

/// What the story wrote.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkspaceSummary {
    /// Tenants.
    pub tenants: usize,
    /// Workspaces.
    pub workspaces: usize,
    /// Envelopes, every workspace's.
    pub envelopes: i64,
    /// Runs per status, in [`RunStatus::ALL`] order.
    pub runs_by_status: Vec<(RunStatus, usize)>,
    /// Dead letters.
    pub dead_letters: usize,
    /// Lease rows, and how many of them had lapsed when written.
    pub leases: usize,
    /// Leases lapsed by the time the story ends.
    pub leases_lapsed: usize,
    /// Consumer cursors.
    pub cursors: usize,
    /// Active stored rules, every workspace's.
    pub stored_rules: usize,
}

impl WorkspaceSummary {
    /// The counts as JSON.
    pub fn to_json(&self) -> Value {
        let by_status: serde_json::Map<String, Value> = self
            .runs_by_status
            .iter()
            .map(|(s, n)| (s.as_str().to_owned(), json!(n)))
            .collect();
        json!({
            "tenants": self.tenants,
            "workspaces": self.workspaces,
            "envelopes": self.envelopes,
            "runs_by_status": by_status,
            "dead_letters": self.dead_letters,
            "leases": self.leases,
            "leases_lapsed": self.leases_lapsed,
            "cursors": self.cursors,
            "stored_rules": self.stored_rules,
        })
    }
}

/// The four workspaces and the services each watches.
pub fn workspaces() -> [(WorkspaceRef, &'static [&'static str]); 4] {
    [
        (
            WorkspaceRef::new("acme", "prod"),
            &["checkout-api", "auth", "search"],
        ),
        (WorkspaceRef::new("acme", "staging"), &["checkout-api", "auth"]),
        (
            WorkspaceRef::new("globex", "payments"),
            &["ledger", "card-gateway", "fx-rates"],
        ),
        (
            WorkspaceRef::new("globex", "platform"),
            &["k8s-ingress", "dns", "ci-runners"],
        ),
    ]
}

fn obj(v: Value) -> JsonObject {
    match v {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

fn stamp(seconds: f64) -> Result<Timestamp> {
    Timestamp::from_secs_f64((seconds * 1e6).round() / 1e6)
}

/// A stored rule's rule, as reflexr's `Rule.model_dump(mode="json")`.
fn rule_json(
    name: &str,
    description: &str,
    types: &[&str],
    ordered: bool,
    blocking: bool,
    params: Value,
) -> Value {
    json!({
        "name": name, "description": description,
        "when": {"filter": {"kind": "on", "types": types}, "dedupe": null,
                 "pattern": {"kind": "each"}, "throttle": null},
        "scope": {"fields": ["service"]}, "then": {"action": name.trim_start_matches("oncall:"), "params": params},
        "retry": {"max_attempts": 5, "backoff": "PT1S", "multiplier": 2.0, "max_backoff": "PT5M"},
        "ordering": if ordered { "scope" } else { "none" },
        "on_dead_letter": if blocking { "block" } else { "continue" },
        "start": "now", "timeout": "PT30S", "enabled": true
    })
}

/// Writes one workspace's story.
struct Writer<'a> {
    storage: &'a dyn WorkspaceStorage,
    clock: &'a ManualClock,
    ws: WorkspaceRef,
    services: &'static [&'static str],
    rng: Rng,
    now: f64,
    runs: Vec<Run>,
    dead_letters: usize,
}

impl Writer<'_> {
    fn at(&self, t: f64) -> Result<()> {
        self.clock.set(stamp(t)?);
        Ok(())
    }

    fn commit(&self, t: f64, f: impl FnOnce(&mut dyn WorkspaceTx) -> Result<()>) -> Result<()> {
        self.at(t)?;
        let mut tx = self.storage.begin(&self.ws)?;
        f(&mut *tx)?;
        tx.commit()
    }

    fn id(&mut self, prefix: &str) -> String {
        format!("{prefix}-{}", &hex_id(&mut self.rng)[..12])
    }

    fn service(&mut self) -> &'static str {
        self.services[self.rng.usize(..self.services.len())]
    }

    /// Installs (or re-installs) a stored rule at `version`, with its `rule_installed` fact.
    fn install(&mut self, t: f64, rule: Value, version: i64, provenance: Value) -> Result<()> {
        let name = rule["name"].as_str().unwrap_or("").to_owned();
        let fact = self.id("install");
        self.commit(t, |tx| {
            tx.save_stored_rule(&StoredRule {
                rule: obj(rule.clone()),
                version,
                status: StoredRuleStatus::Active,
                provenance: obj(provenance.clone()),
            })?;
            tx.append(&[Entry::new(
                fact,
                json!({"kind": "user", "id": "u-ana", "name": "Ana (SRE)"}),
                obj(
                    json!({"type": RULE_INSTALLED, "rule": name, "version": version, "spec": rule,
                           "provenance": provenance}),
                ),
            )])?;
            Ok(())
        })
    }

    fn archive(&mut self, t: f64, rule: Value, version: i64, reason: &str) -> Result<()> {
        let name = rule["name"].as_str().unwrap_or("").to_owned();
        let fact = self.id("archive");
        self.commit(t, |tx| {
            tx.save_stored_rule(&StoredRule {
                rule: obj(rule.clone()),
                version,
                status: StoredRuleStatus::Archived,
                provenance: obj(json!({"by": "u-ana", "via": "console", "reason": reason})),
            })?;
            tx.append(&[Entry::new(
                fact,
                json!({"kind": "user", "id": "u-ana", "name": "Ana (SRE)"}),
                obj(
                    json!({"type": RULE_ARCHIVED, "rule": name, "version": version, "reason": reason,
                           "cancelled": 0}),
                ),
            )])?;
            Ok(())
        })
    }

    /// Appends one source event at `t`; returns its envelope's seq and id.
    fn event(&mut self, t: f64, source: &str, event: Value) -> Result<(i64, String)> {
        let id = self.id("evt");
        let mut appended = Vec::new();
        self.commit(t, |tx| {
            appended = tx.append(&[Entry::new(
                id.clone(),
                json!({"kind": "source", "name": source}),
                obj(event),
            )])?;
            Ok(())
        })?;
        Ok((appended.first().map_or(0, |e| e.seq), id))
    }

    /// A new pending run of `rule` fired by the envelope `(seq, correlation)` at `t`.
    fn fire(&mut self, t: f64, rule: &str, service: &str, fired: (i64, &str), depth: i64) -> Result<Run> {
        let run = Run::pending(NewRun {
            id: self.id("run"),
            rule: rule.into(),
            scope_key: service.into(),
            scope: obj(json!({ "service": service })),
            fired_seq: fired.0,
            matched: vec![fired.0],
            correlation_id: fired.1.into(),
            depth,
            now: stamp(t)?,
        })?;
        Ok(run)
    }

    fn with(run: &Run, changes: Value) -> Result<Run> {
        run.with(obj(changes))
    }

    fn started(&self, run: &Run, t: f64, attempt: i64) -> Result<Run> {
        Self::with(
            run,
            json!({"status": "running", "attempts": attempt, "updated_at": stamp(t)?.to_json_text(),
                   "epoch": attempt}),
        )
    }

    fn save(&mut self, t: f64, run: &Run, append: Vec<Entry>) -> Result<Vec<i64>> {
        let mut seqs = Vec::new();
        self.commit(t, |tx| {
            tx.save_runs(std::slice::from_ref(run))?;
            if !append.is_empty() {
                seqs = tx.append(&append)?.iter().map(|e| e.seq).collect();
            }
            Ok(())
        })?;
        self.runs.retain(|r| r.id() != run.id());
        self.runs.push(run.clone());
        Ok(seqs)
    }

    /// A run's action done at `t`, appending what it emits (caused by the run).
    fn succeed(&mut self, t: f64, run: &Run, emits: Option<Value>, output: Value) -> Result<Option<i64>> {
        let running = self.started(run, t - 2.0, 1)?;
        let done = Self::with(
            &running,
            json!({"status": "succeeded", "output": output, "updated_at": stamp(t)?.to_json_text()}),
        )?;
        let entries = match emits {
            Some(event) => {
                let mut entry = Entry::new(
                    self.id("evt"),
                    json!({"kind": "agent", "rule": run.rule(), "run_id": run.id(), "name": run.rule().trim_start_matches("oncall:")}),
                    obj(event),
                );
                let depth = run.doc().get("depth").and_then(Value::as_i64).unwrap_or(0) + 1;
                entry.causation = Some(json!({"firing_id": run.id(), "run_id": run.id(), "depth": depth}));
                entry.correlation_id = run
                    .doc()
                    .get("correlation_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                vec![entry]
            }
            None => Vec::new(),
        };
        Ok(self.save(t, &done, entries)?.first().copied())
    }

    /// A severe error's page: fired, sent (a `page_sent` caused by it), and the incident it
    /// opens in turn, two runs deep.
    fn page_chain(&mut self, t: f64, service: &str, error: (i64, &str)) -> Result<()> {
        let page = self.fire(t, PAGE, service, error, 0)?;
        self.save(t, &page, Vec::new())?;
        let who = pick(
            &mut self.rng,
            &[("Ana (SRE)", 2), ("Bo (backend)", 2), ("Chen (payments)", 1)],
        );
        let sent = self.succeed(
            t + 6.0,
            &page,
            Some(json!({"type": "oncall:page_sent", "service": service, "to": who, "channel": "pagerduty"})),
            json!({"delivered": true, "to": who}),
        )?;
        if let Some(sent) = sent {
            let incident = self.fire(t + 7.0, INCIDENT, service, (sent, error.1), 1)?;
            self.save(t + 7.0, &incident, Vec::new())?;
            let number = 4000 + self.rng.u32(..5000);
            self.succeed(
                t + 12.0,
                &incident,
                Some(json!({"type": "oncall:incident_opened", "service": service, "incident": format!("INC-{number}"),
                            "severity": "sev2"})),
                json!({"incident": format!("INC-{number}")}),
            )?;
        }
        Ok(())
    }

    /// Two hours of history: heartbeats, deploys and errors, with the runs they fired, all
    /// settled.
    fn history(&mut self, start: f64, end: f64) -> Result<()> {
        let mut t = start;
        while t < end {
            t += uniform(&mut self.rng, 1.0 * MINUTE, 6.0 * MINUTE);
            if t + 15.0 >= end {
                break;
            }
            let service = self.service();
            match pick(&mut self.rng, &[("heartbeat", 6), ("error", 3), ("deploy", 1)]) {
                "heartbeat" => {
                    let latency = (uniform(&mut self.rng, 20.0, 400.0) * 10.0).round() / 10.0;
                    let fired = self.event(
                        t,
                        "heartbeat-probe",
                        json!({"type": "oncall:heartbeat", "service": service, "latency_ms": latency, "ok": true}),
                    )?;
                    if latency > 300.0 {
                        let run = self.fire(t, HEARTBEAT, service, (fired.0, &fired.1), 0)?;
                        self.save(t, &run, Vec::new())?;
                        self.succeed(t + 3.0, &run, None, json!({"gap_ms": latency}))?;
                    }
                }
                "deploy" => {
                    let version = format!("v1.{}.{}", self.rng.u32(10..40), self.rng.u32(0..10));
                    let fired = self.event(
                        t,
                        "github-actions",
                        json!({"type": "oncall:deploy", "service": service, "version": version, "by": "ci"}),
                    )?;
                    let run = self.fire(t, ANNOUNCE, service, (fired.0, &fired.1), 0)?;
                    self.save(t, &run, Vec::new())?;
                    self.succeed(t + 2.0, &run, None, json!({"posted": "#deploys"}))?;
                }
                _ => {
                    let severity = self.rng.u8(3..10);
                    let message = pick(
                        &mut self.rng,
                        &[
                            ("p99 latency above 2s", 3),
                            ("5xx rate above 5%", 3),
                            ("connection pool exhausted", 1),
                            ("TLS certificate expires in 6 days", 1),
                        ],
                    );
                    let error = self.event(
                        t,
                        "prometheus",
                        json!({"type": "oncall:service_error", "service": service, "severity": severity,
                               "message": message}),
                    )?;
                    if severity >= 7 {
                        self.page_chain(t, service, (error.0, &error.1))?;
                    }
                }
            }
        }
        Ok(())
    }

    fn error(&mut self, t: f64, service: &str, severity: u8, message: &str) -> Result<(i64, String)> {
        self.event(
            t,
            "prometheus",
            json!({"type": "oncall:service_error", "service": service, "severity": severity, "message": message}),
        )
    }

    /// The last minutes: runs in every status that is still in play, for the first two
    /// services (`a` and `b`).
    fn present(&mut self, a: &'static str, b: &'static str) -> Result<()> {
        // Each workspace's last minutes end a little before the wall clock.
        let now = self.now - uniform(&mut self.rng, 0.0, 2.0 * MINUTE);
        // A page that died (blocking its service's later pages), and the page behind it.
        let e1 = self.error(now - 14.0 * MINUTE, a, 9, "5xx rate above 20%")?;
        let dead = self.fire(now - 14.0 * MINUTE, PAGE, a, (e1.0, &e1.1), 0)?;
        let dead = Self::with(
            &self.started(&dead, now - 13.0 * MINUTE, 5)?,
            json!({"status": "dead", "error": "pagerduty: 503 Service Unavailable", "reason": "max_attempts",
                   "updated_at": stamp(now - 9.0 * MINUTE)?.to_json_text()}),
        )?;
        self.save(now - 9.0 * MINUTE, &dead, Vec::new())?;
        // Deploy announcements: one retrying (not due yet), one retrying and due, one pending
        // and due, one cancelled (superseded), one skipped.
        let mut deploys = Vec::new();
        for (i, service) in [a, b, a, b, a].into_iter().enumerate() {
            let t = now - (13.0 - 1.2 * i as f64) * MINUTE;
            let version = format!("v2.{}.{}", self.rng.u32(0..9), i);
            let d = self.event(
                t,
                "github-actions",
                json!({"type": "oncall:deploy", "service": service, "version": version, "by": "u-bo"}),
            )?;
            deploys.push((t, self.fire(t, ANNOUNCE, service, (d.0, &d.1), 0)?));
        }
        let (t, r) = &deploys[0];
        let retry_later = Self::with(
            &self.started(r, t + 5.0, 2)?,
            json!({"status": "retrying", "error": "slack: rate limited (429)", "reason": "exception",
                   "next_attempt_at": stamp(now + 3.0 * MINUTE)?.to_json_text()}),
        )?;
        self.save(t + 6.0, &retry_later, Vec::new())?;
        let (t, r) = &deploys[1];
        let retry_due = Self::with(
            &self.started(r, t + 5.0, 1)?,
            json!({"status": "retrying", "error": "timeout after 30s", "reason": "timeout",
                   "next_attempt_at": stamp(now - 40.0)?.to_json_text()}),
        )?;
        self.save(t + 6.0, &retry_due, Vec::new())?;
        let (t, r) = deploys[2].clone();
        self.save(t, &r, Vec::new())?;
        let (t, r) = &deploys[3];
        let cancelled = Self::with(
            r,
            json!({"status": "cancelled", "reason": "superseded by a later deploy"}),
        )?;
        self.save(t + 30.0, &cancelled, Vec::new())?;
        let (t, r) = &deploys[4];
        let skipped = Self::with(r, json!({"status": "skipped", "reason": "operator skipped it"}))?;
        self.save(t + 30.0, &skipped, Vec::new())?;

        let e2 = self.error(now - 6.0 * MINUTE, a, 8, "p99 latency above 2s")?;
        let held = self.fire(now - 6.0 * MINUTE, PAGE, a, (e2.0, &e2.1), 0)?;
        self.save(now - 6.0 * MINUTE, &held, Vec::new())?;

        // A heartbeat check running under a held lease, with a later one waiting behind it.
        let hb1 = self.event(
            now - 5.0 * MINUTE,
            "heartbeat-probe",
            json!({"type": "oncall:heartbeat", "service": b, "latency_ms": 812.5, "ok": false}),
        )?;
        let running = self.fire(now - 5.0 * MINUTE, HEARTBEAT, b, (hb1.0, &hb1.1), 0)?;
        let running = self.started(&running, now - 4.0 * MINUTE, 1)?;
        self.save(now - 4.0 * MINUTE, &running, Vec::new())?;
        let hb2 = self.event(
            now - 3.0 * MINUTE,
            "heartbeat-probe",
            json!({"type": "oncall:heartbeat", "service": b, "latency_ms": 990.0, "ok": false}),
        )?;
        let behind = self.fire(now - 3.0 * MINUTE, HEARTBEAT, b, (hb2.0, &hb2.1), 0)?;
        self.save(now - 3.0 * MINUTE, &behind, Vec::new())?;

        // A page whose worker vanished: running, its lease lapsed (due again).
        let e3 = self.error(now - 2.0 * MINUTE, b, 7, "connection pool exhausted")?;
        let orphan = self.fire(now - 2.0 * MINUTE, PAGE, b, (e3.0, &e3.1), 0)?;
        let orphan = self.started(&orphan, now - 100.0, 1)?;
        self.save(now - 100.0, &orphan, Vec::new())?;

        // A rule that failed to evaluate a malformed heartbeat: dead letters.
        let bad = self.event(
            now - 90.0,
            "heartbeat-probe",
            json!({"type": "oncall:heartbeat", "service": a, "ok": true}),
        )?;
        self.commit(now - 89.0, |tx| {
            tx.dead_letter(&[EvaluationError::new(HEARTBEAT, bad.0, "KeyError: 'latency_ms'")])
        })?;
        self.dead_letters += 1;

        // Leases: the running check's worker holds its run; the orphan's lapsed; the
        // scheduler's is held, the old relay's lapsed long ago.
        self.at(now - 4.0 * MINUTE)?;
        self.lease(
            &run_lease(running.id()),
            "worker-7f3a",
            Duration::from_secs(20 * 60),
        )?;
        self.at(now - 100.0)?;
        self.lease(&run_lease(orphan.id()), "worker-22c1", Duration::from_secs(30))?;
        self.at(now - 30.0)?;
        self.lease("scheduler", "scheduler-1", Duration::from_secs(3600))?;
        self.at(now - 2.0 * HOUR)?;
        self.lease("relay", "relay-0", Duration::from_secs(60))?;
        self.at(now)?;
        Ok(())
    }

    fn lease(&self, key: &str, holder: &str, ttl: Duration) -> Result<()> {
        if !self.storage.acquire_lease(&self.ws, key, holder, ttl)? {
            return Err(StoreError::invalid("lease", format!("{key} is taken")));
        }
        Ok(())
    }

    /// Each rule's progress at the head, the schedules' last ticks and the consumers'
    /// cursors, some behind.
    fn bookkeeping(&mut self) -> Result<()> {
        let head = self.storage.head_seq(&self.ws)?;
        let now = self.now;
        self.commit(now, |tx| {
            for rule in [PAGE, ANNOUNCE, HEARTBEAT, INCIDENT] {
                tx.save_progress(
                    rule,
                    &RuleProgress::from_doc(obj(json!({
                        "cursor": head, "generation": 1, "definition": "5f0c2a9e1d3b7a64",
                        "deadlines": {}, "silent_through": 0
                    }))),
                )?;
            }
            let hour = (now / HOUR).floor() * HOUR;
            tx.save_schedule("hourly-digest", stamp(hour)?)?;
            tx.save_schedule("nightly-report", stamp(hour - 10.0 * HOUR)?)
        })?;
        for (name, behind) in [("exporter", 3), ("slack-bridge", 25), ("audit-archive", 0)] {
            let seq = (head - behind - self.rng.i64(0..3)).max(0);
            self.storage.save_cursor(&self.ws, name, seq)?;
        }
        Ok(())
    }
}

/// Writes the workspace story into `storage`, moving `clock` as it goes; `now` is the wall
/// clock (epoch seconds) the story ends at.
pub fn generate_workspaces(
    storage: &dyn WorkspaceStorage,
    clock: &ManualClock,
    seed: u64,
    now: f64,
) -> Result<WorkspaceSummary> {
    let mut rng = Rng::with_seed(seed ^ 0x5eed_0f0c_a11e);
    let mut summary = WorkspaceSummary::default();
    let mut all_runs = Vec::new();
    for (n, (ws, services)) in workspaces().into_iter().enumerate() {
        let mut w = Writer {
            storage,
            clock,
            ws,
            services,
            rng: Rng::with_seed(rng.u64(..)),
            now,
            runs: Vec::new(),
            dead_letters: 0,
        };
        let start = now - 3.0 * HOUR;
        let page = |description: &str, threshold: u8| {
            rule_json(
                PAGE,
                description,
                &["oncall:service_error"],
                true,
                true,
                json!({"min_severity": threshold, "service": "pagerduty"}),
            )
        };
        w.install(
            start,
            page("Page the on-call engineer on severe errors", 8),
            1,
            json!({"by": "u-ana", "via": "console", "ticket": "OPS-101"}),
        )?;
        w.install(
            start + 60.0,
            rule_json(
                ANNOUNCE,
                "Announce deploys in #deploys",
                &["oncall:deploy"],
                false,
                false,
                json!({"channel": "#deploys"}),
            ),
            1,
            json!({"by": "u-bo", "via": "api"}),
        )?;
        w.install(
            start + 120.0,
            rule_json(
                HEARTBEAT,
                "Check services whose heartbeat is slow",
                &["oncall:heartbeat"],
                true,
                false,
                json!({"max_latency_ms": 300}),
            ),
            1,
            json!({"by": "u-ana", "via": "console"}),
        )?;
        let legacy = rule_json(
            LEGACY,
            "Text the on-call phone (retired)",
            &["oncall:service_error"],
            false,
            false,
            json!({"provider": "twilio"}),
        );
        w.install(
            start + 180.0,
            legacy.clone(),
            1,
            json!({"by": "u-old", "via": "import"}),
        )?;
        let mid = start + 1.5 * HOUR;
        w.history(start + 4.0 * MINUTE, mid)?;
        if n == 0 {
            // Three versions of the paging rule, and the retired SMS rule archived.
            w.install(mid, page("Page on severity 7 and above", 7), 2, json!({"by": "u-ana", "via": "console", "ticket": "OPS-117", "note": "lowered after INC-4410"}))?;
            w.archive(mid + 60.0, legacy, 2, "replaced by oncall:page")?;
        }
        w.history(mid + 2.0 * MINUTE, now - 25.0 * MINUTE)?;
        if n == 0 {
            w.install(
                now - 24.0 * MINUTE,
                page("Page on severity 7 and above, with the runbook", 7),
                3,
                json!({"by": "u-chen", "via": "api", "ticket": "OPS-130", "review": "approved by u-ana"}),
            )?;
        }
        w.present(services[0], services[1])?;
        w.bookkeeping()?;
        summary.envelopes += storage.head_seq(&w.ws)?;
        summary.dead_letters += w.dead_letters;
        summary.cursors += storage.cursors(&w.ws)?.len();
        summary.stored_rules += storage.stored_rules(&w.ws)?.len();
        let leases = storage.leases(&w.ws)?;
        summary.leases += leases.len();
        let at_now = stamp(now)?;
        summary.leases_lapsed += leases.iter().filter(|l| l.expires_at <= at_now).count();
        all_runs.append(&mut w.runs);
        rng = w.rng;
    }
    summary.workspaces = 4;
    summary.tenants = 2;
    summary.runs_by_status = RunStatus::ALL
        .iter()
        .map(|s| (*s, all_runs.iter().filter(|r| r.status() == *s).count()))
        .collect();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use execstore::workspace::{LogQuery, MemoryWorkspaceStorage, RunPolicy, RunQuery};

    use super::*;

    const NOW: f64 = 1_767_268_800.0;

    fn write(seed: u64) -> (MemoryWorkspaceStorage, WorkspaceSummary) {
        let clock = Arc::new(ManualClock::new(stamp(NOW).unwrap()));
        let storage = MemoryWorkspaceStorage::new(clock.clone());
        let summary = generate_workspaces(&storage, &clock, seed, NOW).unwrap();
        (storage, summary)
    }

    #[test]
    fn the_story_has_every_run_status_and_what_the_monitor_shows() {
        let (s, summary) = write(42);
        assert_eq!(s.workspaces().unwrap().len(), 4);
        for (status, n) in &summary.runs_by_status {
            assert!(*n > 0, "no {status} run: {summary:?}");
        }
        assert!(
            summary.dead_letters > 0 && summary.leases_lapsed > 0 && summary.leases > summary.leases_lapsed
        );
        let prod = WorkspaceRef::new("acme", "prod");
        let history = s.rule_history(&prod, PAGE).unwrap();
        assert_eq!(history.len(), 3, "three versions of the paging rule");
        assert_eq!(
            s.rule_history(&prod, LEGACY).unwrap().len(),
            2,
            "installed, archived"
        );
        let head = s.head_seq(&prod).unwrap();
        assert!(s.cursors(&prod).unwrap().iter().any(|(_, seq)| *seq < head));
        // A chain two runs deep.
        let log = s.read(&prod, &LogQuery::new()).unwrap();
        assert!(log.iter().any(|e| e.event_type() == "oncall:incident_opened"
            && e.causation.as_ref().and_then(|c| c.get("depth")) == Some(&json!(2))));
        // Under the stored rules' policy some runs are due and one page is held by a dead one.
        let policy = RunPolicy {
            ordered: [PAGE, HEARTBEAT].iter().map(|s| s.to_string()).collect(),
            blocking: [PAGE].iter().map(|s| s.to_string()).collect(),
            ..RunPolicy::new()
        };
        let due = s.due_runs(stamp(NOW).unwrap(), 100, &policy).unwrap();
        assert!(!due.is_empty());
        let pending_pages = s
            .runs(
                &prod,
                &RunQuery {
                    rule: Some(PAGE.into()),
                    status: Some(RunStatus::Pending),
                    ..RunQuery::default()
                },
            )
            .unwrap();
        assert!(!pending_pages.is_empty());
        assert!(
            due.iter().all(|(_, r)| r.id() != pending_pages[0].id()),
            "held by the dead page"
        );
    }

    #[test]
    fn the_same_seed_writes_the_same_story() {
        let (a, sa) = write(7);
        let (b, sb) = write(7);
        assert_eq!(sa, sb);
        let prod = WorkspaceRef::new("acme", "prod");
        let ids = |s: &MemoryWorkspaceStorage| -> Vec<String> {
            s.read(&prod, &LogQuery::new())
                .unwrap()
                .into_iter()
                .map(|e| e.id)
                .collect()
        };
        assert_eq!(ids(&a), ids(&b));
        let (c, _) = write(8);
        assert_ne!(ids(&a), ids(&c));
    }
}

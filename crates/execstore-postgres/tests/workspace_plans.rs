//! PostgreSQL's plans of PgWorkspaceStorage's reads, on a real server (`EXECSTORE_PG_URL`):
//! the log's tail and typed reads, a page of leases and `due_runs` walk their indexes, with
//! the custom plans of a first call and the generic plan of a cached statement alike.

#[macro_use]
mod common;

use std::time::Duration;

use execstore::conformance::workspace::entry;
use execstore::workspace::{Entry, LogQuery, NewRun, Run, Timestamp, WorkspaceStorage};
use execstore_postgres::PgWorkspaceStorage;

use common::{commit_append, ws};

/// On a workspace of 20,000 envelopes, the store's own tail read walks the primary key
/// backwards from the end, and typed reads use `ix_reflexr_events_type`: never a sequential
/// scan of the log, with the custom plans of a first call and the generic plan of a cached
/// statement alike.
#[test]
fn tail_and_typed_reads_use_the_indexes() {
    let h = ws_harness!();
    let s = h.pg();
    let w = ws("t-plan", "w");
    for other in ["a", "b", "c"] {
        commit_append(s, &ws("t-plan", other), &[entry("o", "x")]);
    }
    for chunk in 0..10 {
        let entries: Vec<Entry> = (0..2000)
            .map(|i| {
                let n = chunk * 2000 + i;
                entry(&format!("e{n}"), if n % 50 == 0 { "rare" } else { "common" })
            })
            .collect();
        commit_append(s, &w, &entries);
    }
    h.client().batch_execute("ANALYZE reflexr_events").unwrap();
    let tail = LogQuery::new().last(20);
    let typed = LogQuery::new().types(["suite:rare"]).limit(10);
    let typed_tail = LogQuery::new().types(["suite:rare"]).last(5);
    let several = LogQuery::new()
        .after(100)
        .types(["suite:rare", "suite:none"])
        .limit(10);
    let check = |q: &LogQuery, index: &str, backward: bool| {
        let plan = s.explain_read(&w, q, "").unwrap();
        assert!(!plan.contains("Seq Scan"), "{q:?}:\n{plan}");
        assert!(plan.contains(" on reflexr_events"), "{q:?}:\n{plan}");
        assert!(plan.contains(index), "{q:?} does not use {index}:\n{plan}");
        if backward {
            assert!(plan.contains("Index Scan Backward"), "{q:?}:\n{plan}");
        }
        plan
    };
    check(&tail, "pk_reflexr_events", true);
    check(&typed, "ix_reflexr_events_type", false);
    check(&typed_tail, "ix_reflexr_events_type", true);
    // Several types: an index either way (the planner may rather walk the key in order).
    check(&several, "Index", false);
    let analyzed = s.explain_read(&w, &tail, "ANALYZE").unwrap();
    assert!(
        analyzed.contains("rows=20 "),
        "the tail read reads 20 rows:\n{analyzed}"
    );
    // The answers, for good measure.
    let got = s.read(&w, &tail).unwrap();
    assert_eq!(got.first().map(|e| e.seq), Some(19_981));
    assert_eq!(
        s.read(&w, &typed_tail)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect::<Vec<_>>(),
        [19_751, 19_801, 19_851, 19_901, 19_951]
    );
    // The generic plan (a statement cached after five calls may switch to it).
    let url = format!(
        "{}{}options=-c%20plan_cache_mode%3Dforce_generic_plan",
        h.url,
        if h.url.contains('?') { '&' } else { '?' }
    );
    let generic = PgWorkspaceStorage::open(&url, h.options()).unwrap();
    for (q, index, backward) in [
        (&tail, "pk_reflexr_events", true),
        (&typed, "ix_reflexr_events_type", false),
    ] {
        let plan = generic.explain_read(&w, q, "").unwrap();
        assert!(
            !plan.contains("Seq Scan") && plan.contains(index),
            "generic {q:?}:\n{plan}"
        );
        assert!(
            !backward || plan.contains("Index Scan Backward"),
            "generic {q:?}:\n{plan}"
        );
    }
}

/// On a workspace of 20,000 lease rows, a page of leases walks `pk_reflexr_leases` from the
/// key it starts after (custom and generic plans alike) where the database's collation sorts
/// keys as bytes (libc `C`, as the test clusters are); in another (ICU, `C.utf8`, any
/// language's) it must sort, but answers alike (the suite's `leases_page_pages_the_leases`
/// passes on such databases too).
#[test]
fn a_page_of_leases_walks_the_key() {
    let h = ws_harness!();
    let s = h.pg();
    let w = ws("t-lpg", "w");
    let mut c = h.client();
    c.batch_execute(
        "INSERT INTO reflexr_leases (tenant_id, workspace_id, key, holder, expires_at) \
         SELECT 't-lpg', w, 'run:' || lpad(g::text, 6, '0'), 'h', now() \
         FROM generate_series(1, 20000) g, (VALUES ('v'), ('w'), ('x')) AS ws(w); \
         ANALYZE reflexr_leases",
    )
    .unwrap();
    let bytes: bool = c
        .query_one(
            "SELECT datcollate IN ('C', 'POSIX') AND coalesce(to_jsonb(d) ->> 'datlocprovider', 'c') = 'c' \
             FROM pg_database d WHERE datname = current_database()",
            &[],
        )
        .unwrap()
        .get(0);
    let page = s.leases_page(&w, Some("run:010000"), 3).unwrap();
    let keys: Vec<&str> = page.iter().map(|l| l.key.as_str()).collect();
    assert_eq!(keys, ["run:010001", "run:010002", "run:010003"]);
    let plan = s.explain_leases_page(&w, Some("run:010000"), 100, "").unwrap();
    if !bytes {
        assert!(plan.contains("Sort"), "{plan}");
        return;
    }
    let check = |plan: &str| {
        assert!(plan.contains("pk_reflexr_leases"), "{plan}");
        assert!(!plan.contains("Seq Scan") && !plan.contains("Sort"), "{plan}");
    };
    check(&plan);
    let analyzed = s.explain_leases_page(&w, None, 100, "ANALYZE").unwrap();
    check(&analyzed);
    assert!(analyzed.contains("rows=100 "), "reads 100 rows:\n{analyzed}");
    let url = format!(
        "{}{}options=-c%20plan_cache_mode%3Dforce_generic_plan",
        h.url,
        if h.url.contains('?') { '&' } else { '?' }
    );
    let generic = PgWorkspaceStorage::open(&url, h.options()).unwrap();
    check(
        &generic
            .explain_leases_page(&w, Some("run:010000"), 100, "")
            .unwrap(),
    );
}

/// On 20,000 runs (pending, retrying, running with and without their lease, succeeded, dead;
/// ten rules over a hundred scopes), `due_runs` walks `ix_reflexr_runs_due` once per status
/// and probes each running run's lease by its key: no sequential scan, no hash of the
/// leases, and no sort of every due run, under each kind of policy and in the generic plan
/// too. (Before, one statement over `status IN (...)` joined the leases and sorted every due
/// run: seconds at 1,000,000 runs.)
#[test]
fn due_runs_walk_the_due_index() {
    use execstore::workspace::{run_lease, RunPolicy};
    let h = ws_harness!();
    let s = h.pg();
    let w = ws("t-due", "w");
    let t0 = Timestamp::parse_json_text("2026-01-01T00:00:00Z").unwrap();
    let statuses = ["pending", "pending", "retrying", "running", "succeeded", "dead"];
    for chunk in 0..10 {
        let runs: Vec<Run> = (0..2000)
            .map(|i| {
                let j = chunk * 2000 + i;
                let run = Run::pending(NewRun {
                    id: format!("r{j:05}"),
                    rule: format!("rule{}", j % 10),
                    scope_key: format!("s{}", (j / 10) % 100),
                    scope: Default::default(),
                    fired_seq: j as i64 + 1,
                    matched: vec![j as i64 + 1],
                    correlation_id: "c".into(),
                    depth: 0,
                    now: t0,
                })
                .unwrap();
                let mut changes = execstore::executions::JsonObject::new();
                changes.insert("status".into(), statuses[(j / 7) % 6].into());
                changes.insert(
                    "next_attempt_at".into(),
                    t0.plus_micros((j % 3600) as i64 * 1_000_000)
                        .unwrap()
                        .to_json_text()
                        .into(),
                );
                run.with(changes).unwrap()
            })
            .collect();
        let mut tx = s.begin(&w).unwrap();
        tx.save_runs(&runs).unwrap();
        tx.commit().unwrap();
    }
    for j in (0..20_000).filter(|j| statuses[(j / 7) % 6] == "running" && j % 2 == 0) {
        assert!(s
            .acquire_lease(
                &w,
                &run_lease(&format!("r{j:05}")),
                "h",
                Duration::from_secs(3600)
            )
            .unwrap());
    }
    h.client()
        .batch_execute("ANALYZE reflexr_runs; ANALYZE reflexr_leases")
        .unwrap();
    let set = |names: &[&str]| names.iter().map(|s| s.to_string()).collect();
    let policies = [
        RunPolicy::new(),
        RunPolicy {
            ordered: set(&["rule0", "rule1", "rule2"]),
            blocking: set(&["rule0"]),
            disabled: set(&["rule9"]),
        },
    ];
    let now = t0.plus_micros(1800 * 1_000_000).unwrap();
    let check = |plan: &str, what: &str| {
        assert!(!plan.contains("Seq Scan"), "{what}:\n{plan}");
        assert!(!plan.contains("Hash"), "{what}:\n{plan}");
        assert_eq!(plan.matches("ix_reflexr_runs_due").count(), 3, "{what}:\n{plan}");
        assert!(plan.contains("pk_reflexr_leases"), "{what}:\n{plan}");
    };
    for policy in &policies {
        let plan = s.explain_due_runs(now, 100, policy, "").unwrap();
        check(&plan, &format!("{policy:?}"));
        let analyzed = s.explain_due_runs(now, 100, policy, "ANALYZE").unwrap();
        // The walks stop early: none reads a thousand runs.
        assert!(
            !analyzed.contains("Sort Method: external") && analyzed.contains("Limit"),
            "{analyzed}"
        );
        let due = s.due_runs(now, 100, policy).unwrap();
        assert_eq!(due.len(), 100, "{policy:?}");
    }
    let url = format!(
        "{}{}options=-c%20plan_cache_mode%3Dforce_generic_plan",
        h.url,
        if h.url.contains('?') { '&' } else { '?' }
    );
    let generic = PgWorkspaceStorage::open(&url, h.options()).unwrap();
    for policy in &policies {
        let plan = generic.explain_due_runs(now, 100, policy, "").unwrap();
        check(&plan, &format!("generic {policy:?}"));
    }
}

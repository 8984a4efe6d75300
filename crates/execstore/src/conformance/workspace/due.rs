//! `due_runs`: the policy cases one by one, and random populations against the reference.

use super::*;

fn due_ids(s: &dyn WorkspaceStorage, now: Timestamp, limit: usize, policy: &RunPolicy) -> Vec<String> {
    s.due_runs(now, limit, policy)
        .unwrap()
        .into_iter()
        .map(|(_, r)| r.id().to_owned())
        .collect()
}

fn set<const N: usize>(names: [&str; N]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

/// The policy cases the seed lists, one by one.
pub fn due_runs_policy_cases(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let w = ws("t-due", "w");
    let now = at(100);
    let mk = |id: &str, rule: &str, scope: &str, fired: i64, status: RunStatus, next: i64| {
        with_status(&run(id, rule, scope, fired, t0()), status, at(next))
    };
    commit(s, &w, |tx| {
        tx.save_runs(&[
            // Unordered rule: every due waiting run; not-yet-due and finished ones are not.
            mk("u1", "free", "k", 1, RunStatus::Pending, 10),
            mk("u2", "free", "k", 2, RunStatus::Retrying, 20),
            mk("u3", "free", "k", 3, RunStatus::Pending, 500),
            mk("u4", "free", "k", 4, RunStatus::Succeeded, 0),
            mk("u5", "free", "k", 5, RunStatus::Dead, 0),
            // Ordered scope with a backlog: only the first holder.
            mk("o1", "ord", "s1", 1, RunStatus::Pending, 30),
            mk("o2", "ord", "s1", 2, RunStatus::Pending, 5),
            mk("o3", "ord", "s1", 3, RunStatus::Pending, 6),
            // Finished runs do not hold: s2's first waiting run is due.
            mk("p1", "ord", "s2", 1, RunStatus::Succeeded, 0),
            mk("p2", "ord", "s2", 2, RunStatus::Cancelled, 0),
            mk("p3", "ord", "s2", 3, RunStatus::Skipped, 0),
            mk("p4", "ord", "s2", 4, RunStatus::Dead, 0),
            mk("p5", "ord", "s2", 5, RunStatus::Pending, 40),
            // A retrying run holds its scope even while not due yet.
            mk("q1", "ord", "s3", 1, RunStatus::Retrying, 900),
            mk("q2", "ord", "s3", 2, RunStatus::Pending, 1),
            // Blocking rule: a dead-lettered run holds the scope.
            mk("b1", "blk", "s4", 1, RunStatus::Dead, 0),
            mk("b2", "blk", "s4", 2, RunStatus::Pending, 2),
            // Same fired seq: creation order decides (c2 created first).
            mk("c2", "ord", "s5", 7, RunStatus::Pending, 50),
            mk("c1", "ord", "s5", 7, RunStatus::Pending, 3),
            // Disabled rule: left out.
            mk("d1", "off", "k", 1, RunStatus::Pending, 0),
            // Running: due only when the lease is missing or lapsed, wherever it is.
            mk("x1", "ord", "s6", 1, RunStatus::Pending, 4),
            mk("x2", "ord", "s6", 2, RunStatus::Running, 60),
            mk("x3", "ord", "s7", 1, RunStatus::Running, 70),
            mk("x4", "free", "k", 9, RunStatus::Running, 80),
        ])
        .unwrap();
    });
    h.clock().set(at(0));
    assert!(s
        .acquire_lease(&w, &run_lease("x3"), "exec", Duration::from_secs(1000))
        .unwrap());
    assert!(s
        .acquire_lease(&w, &run_lease("x4"), "exec", Duration::from_secs(50))
        .unwrap());
    let policy = RunPolicy {
        disabled: set(["off"]),
        ordered: set(["ord", "blk"]),
        blocking: set(["blk"]),
    };
    // Ordered by due time.
    assert_eq!(
        due_ids(s, now, 100, &policy),
        ["x1", "u1", "u2", "o1", "p5", "c2", "x2", "x4"],
        "x2: running without a lease; x4's lapsed at 50; x3's holds"
    );
    // The limit is applied after the policy: the backlog and the disabled rule take no place.
    assert_eq!(due_ids(s, now, 3, &policy), ["x1", "u1", "u2"]);
    assert_eq!(due_ids(s, now, 0, &policy), Vec::<String>::new());
    // Not blocking: the dead run no longer holds s4.
    let not_blocking = RunPolicy {
        blocking: BTreeSet::new(),
        ..policy.clone()
    };
    assert!(due_ids(s, now, 100, &not_blocking).contains(&"b2".to_string()));
    // A rule the policy does not name has every due run returned.
    let open = RunPolicy::new();
    let all = due_ids(s, now, 100, &open);
    for id in ["o2", "o3", "q2", "b2", "c1", "d1", "o1"] {
        assert!(
            all.contains(&id.to_string()),
            "{id} with an empty policy: {all:?}"
        );
    }
    assert!(!all.contains(&"x3".to_string()));
    // Earlier now: nothing due yet but the lapsed/missing running leases.
    assert_eq!(due_ids(s, at(0), 100, &policy), ["x2"]);
}

/// `due_runs` restated run by run, by brute force and apart from [`reference_due_runs`] (which
/// the in-memory storage answers with): a run is due when its rule is not disabled and it is
/// running with its lease missing or lapsed, or waiting, due, and (under an ordered rule) no
/// run of its scope that holds it fired before it. `runs` are `(workspace index, creation
/// position, run, lease expiry)`.
fn brute_force_due(
    runs: &[(usize, i64, &Run, Option<Timestamp>)],
    workspaces: &[WorkspaceRef],
    now: Timestamp,
    limit: usize,
    policy: &RunPolicy,
) -> Vec<String> {
    let is_due = |&(wi, pos, run, lease): &(usize, i64, &Run, Option<Timestamp>)| {
        if policy.disabled.contains(run.rule()) {
            return false;
        }
        match run.status() {
            RunStatus::Running => lease.is_none_or(|at| at <= now),
            RunStatus::Pending | RunStatus::Retrying if run.next_attempt_at() <= now => {
                !policy.ordered.contains(run.rule())
                    || !runs.iter().any(|&(owi, opos, other, _)| {
                        owi == wi
                            && other.rule() == run.rule()
                            && other.scope_key() == run.scope_key()
                            && (other.fired_seq(), opos) < (run.fired_seq(), pos)
                            && (matches!(
                                other.status(),
                                RunStatus::Pending | RunStatus::Retrying | RunStatus::Running
                            ) || (other.status() == RunStatus::Dead
                                && policy.blocking.contains(run.rule())))
                    })
            }
            _ => false,
        }
    };
    let mut due: Vec<_> = runs.iter().filter(|c| is_due(c)).collect();
    due.sort_by_key(|&&(wi, pos, run, _)| (run.next_attempt_at(), &workspaces[wi], pos));
    due.into_iter()
        .take(limit)
        .map(|&(wi, _, run, _)| format!("{}:{}", workspaces[wi], run.id()))
        .collect()
}

/// Random populations across workspaces: each backend's `due_runs` equals the reference
/// (reflexr 0.1.1's definition, [`reference_due_runs`]) for many `now`, limits and policies.
/// The reference is the in-memory storage's own answer, so it is checked too: against
/// [`brute_force_due`] here, and against reflexr's own storage by
/// `tests/python/reflexr/test_differential.py`.
pub fn due_runs_match_the_reference(h: &dyn WorkspaceHarness) {
    let s = h.storage();
    let mut rng = fastrand::Rng::with_seed(7);
    let workspaces = [ws("t-ref", "a"), ws("t-ref", "b"), ws("t-ref2", "a")];
    let rules = ["r1", "r2", "r3"];
    let mut all: Vec<(WorkspaceRef, Run)> = Vec::new();
    for (wi, w) in workspaces.iter().enumerate() {
        let mut runs = Vec::new();
        for i in 0..60 {
            let status = RunStatus::ALL[rng.usize(0..7)];
            let r = with_status(
                &run(
                    &format!("w{wi}-r{i}"),
                    rules[rng.usize(0..3)],
                    &format!("s{}", rng.u64(0..4)),
                    rng.i64(0..10),
                    t0(),
                ),
                status,
                at(rng.i64(0..20)),
            );
            runs.push(r);
        }
        commit(s, w, |tx| tx.save_runs(&runs).unwrap());
        h.clock().set(at(0));
        for r in runs.iter().filter(|r| r.status() == RunStatus::Running) {
            if rng.u64(0..2) == 0 {
                s.acquire_lease(
                    w,
                    &run_lease(r.id()),
                    "x",
                    Duration::from_secs(rng.u64(0..20) + 1),
                )
                .unwrap();
            }
        }
        all.extend(runs.into_iter().map(|r| (w.clone(), r)));
    }
    let leases: Vec<_> = workspaces.iter().map(|w| s.leases(w).unwrap()).collect();
    let restated: Vec<(usize, i64, &Run, Option<Timestamp>)> = all
        .iter()
        .map(|(w, r)| {
            let wi = workspaces.iter().position(|x| x == w).unwrap_or(0);
            let lease = leases[wi]
                .iter()
                .find(|l| l.key == run_lease(r.id()))
                .map(|l| l.expires_at);
            // Runs were saved in creation order, 60 per workspace: `w{wi}-r{i}` is at i + 1.
            let pos = r
                .id()
                .rsplit("-r")
                .next()
                .and_then(|i| i.parse::<i64>().ok())
                .unwrap_or(0)
                + 1;
            (wi, pos, r, lease)
        })
        .collect();
    let mut checked = 0;
    for round in 0..40 {
        let now = at(rng.i64(0..22));
        let limit = rng.usize(0..30);
        let pick = |rng: &mut fastrand::Rng| {
            rules
                .iter()
                .filter(|_| rng.bool())
                .map(|r| r.to_string())
                .collect::<BTreeSet<_>>()
        };
        let policy = RunPolicy {
            disabled: pick(&mut rng),
            ordered: pick(&mut rng),
            blocking: pick(&mut rng),
        };
        let mut positions = std::collections::HashMap::new();
        let candidates = all.iter().map(|(w, r)| {
            let wi = workspaces.iter().position(|x| x == w).unwrap_or(0);
            let p = positions.entry(wi).or_insert(0i64);
            *p += 1;
            Candidate {
                workspace: w,
                position: *p,
                run: r,
                lease_expires_at: leases[wi]
                    .iter()
                    .find(|l| l.key == run_lease(r.id()))
                    .map(|l| l.expires_at),
            }
        });
        let want: Vec<String> = reference_due_runs(candidates, now, limit, &policy)
            .into_iter()
            .map(|(w, r)| format!("{w}:{}", r.id()))
            .collect();
        let got: Vec<String> = s
            .due_runs(now, limit, &policy)
            .unwrap()
            .into_iter()
            .map(|(w, r)| format!("{w}:{}", r.id()))
            .collect();
        assert_eq!(got, want, "round {round}: now {now}, limit {limit}, {policy:?}");
        let brute = brute_force_due(&restated, &workspaces, now, limit, &policy);
        assert_eq!(
            want, brute,
            "the reference, round {round}: now {now}, limit {limit}, {policy:?}"
        );
        checked += usize::from(!want.is_empty());
    }
    assert!(
        checked >= 20,
        "only {checked} of 40 rounds had a run due: the populations test little"
    );
}

//! The endpoints: each a read (or a write) of the store, answered as JSON.

use std::collections::{HashMap, HashSet};

use execstore::kit::filter::{Expr, Filter, Op, Path as FilterPath, Term, Value as FilterValue};
use execstore::kit::validate::MAX_PAGE;

/// How many parents' times one listing of the spawns page reads.
const PARENTS_A_READ: usize = 200;
use execstore::{
    executions::{
        control, encode_cursor, paging, ExecutionPage, ExecutionSummary, ListOrder, ListQuery, Status,
    },
    kit::pyjson,
    ExecutionStore, StoreError,
};
use serde_json::{json, Value};

use crate::params::{check_id, decode_timer_cursor, encode_timer_cursor, seq_in_path, Params};
use crate::{decode, ApiError, ApiResult, Call, ALL_TIMERS};

/// How many entries of each kind an execution's own timers, outbox and spawns are looked
/// for among (the store lists them store-wide only); past that the answer says `truncated`.
const SCAN_CAP: usize = 200_000;
/// How far up the parent chain a detail goes.
const MAX_ANCESTORS: usize = 64;
/// How many children a detail loads the summaries of.
const MAX_CHILDREN: usize = 500;
/// How many unreadable rows an answer names.
pub(crate) const MAX_ERRORS: usize = 100;

impl Call<'_> {
    fn params(&self, known: &[&str]) -> Result<Params, ApiError> {
        Params::new(self.request.query, known, self.now)
    }

    // -----------------------------------------------------------------------------------------
    // Writes

    pub(crate) fn ack_outbox(&self, raw_seq: &str) -> ApiResult {
        let seq = seq_in_path(&decode(raw_seq)?)?;
        self.exec()?.ack_outbox(seq)?;
        Ok(json!({ "acked": seq }))
    }

    pub(crate) fn ack_spawn(&self, raw_seq: &str) -> ApiResult {
        let seq = seq_in_path(&decode(raw_seq)?)?;
        self.exec()?.ack_spawn(seq)?;
        Ok(json!({ "acked": seq }))
    }

    pub(crate) fn delete_timer(&self) -> ApiResult {
        let params = self.params(&["execution_id", "path", "fire_at"])?;
        let required = |name: &str| {
            params
                .get(name)
                .ok_or_else(|| ApiError::bad_request(format!("{name} is required")))
        };
        let execution_id = required("execution_id")?;
        let path = required("path")?;
        let fire_at = params
            .time("fire_at")?
            .ok_or_else(|| ApiError::bad_request("fire_at is required"))?;
        if !self.exec()?.delete_timer(execution_id, path, fire_at)? {
            return Err(ApiError::not_found(format!(
                "no timer of {execution_id} at {path} firing at {fire_at} (fired or re-armed meanwhile?)"
            )));
        }
        Ok(json!({ "deleted": true }))
    }

    // -----------------------------------------------------------------------------------------
    // Reads

    /// The rows the store's listings skip because they cannot be read (`[{id, field,
    /// message}]`, at most [`MAX_ERRORS`]): one bad row never takes a whole view down, and the
    /// view names it.
    pub(crate) fn unreadable(&self) -> Result<Vec<execstore::executions::UnreadableRow>, ApiError> {
        Ok(self.exec()?.unreadable_executions(MAX_ERRORS)?)
    }

    pub(crate) fn info(&self) -> Value {
        let mut info = self.api.info.clone();
        // What the host could not vouch for (the native monitor's unknown reflexr version);
        // every host answers the key, so the edge and in-browser monitors answer as it does.
        if !info.contains_key("warnings") {
            info.insert("warnings".into(), json!([]));
        }
        info.insert("writable".into(), json!(self.api.writable()));
        info.insert("bulk_limit".into(), json!(crate::control::BULK_LIMIT));
        info.insert("now".into(), json!(self.now));
        // Who is asking (when a known token is sent), and the role each write needs, so the
        // UI can show the name and hide what the role cannot do.
        info.insert(
            "caller".into(),
            match &self.caller {
                crate::Caller::Known { name, role } => json!({ "name": name, "role": role.as_str() }),
                _ => Value::Null,
            },
        );
        if self.request.authorization.is_some() && self.caller == crate::Caller::Unknown {
            info.insert(
                "caller_error".into(),
                json!("the Authorization header names none of the monitor's tokens"),
            );
        }
        info.insert("actions".into(), crate::routes::write_roles());
        info.insert(
            "holds".into(),
            json!({
                "executions": self.stores.executions.is_some(),
                "workspaces": self.stores.workspaces.is_some(),
            }),
        );
        Value::Object(info)
    }

    pub(crate) fn changes(&self) -> ApiResult {
        let mut token = match self.stores.executions {
            Some(store) => store.change_token()?,
            None => String::new(),
        };
        if let Some(ws) = self.stores.workspaces {
            token.push_str(&format!("/w{}", self.workspace_token(ws)?));
        }
        Ok(json!({ "token": token, "now": self.now }))
    }

    /// The counts by status of exactly the rows the listing with the same parameters
    /// selects (every filter of [`list_filter`], and `q`), its status filter, cursor, page
    /// size and order aside.
    pub(crate) fn counts(&self) -> ApiResult {
        let mut known: Vec<&str> = LIST_FILTERS.to_vec();
        known.extend(["limit", "cursor"]);
        let params = self.params(&known)?;
        let ListFilter { query, prefix } = list_filter(&params)?;
        let counts = match prefix {
            Some(prefix) => count_prefix(self.exec()?, query, &prefix)?,
            None => self.exec()?.count_by_status(&query)?,
        };
        let total: u64 = counts.iter().map(|(_, n)| n).sum();
        let by_status: serde_json::Map<String, Value> = counts
            .into_iter()
            .map(|(status, n)| (status.as_str().to_owned(), json!(n)))
            .collect();
        let errors = self.unreadable()?;
        Ok(json!({ "counts": by_status, "total": total, "errors": errors }))
    }

    pub(crate) fn executions(&self) -> ApiResult {
        let mut known: Vec<&str> = LIST_FILTERS.to_vec();
        known.extend(["limit", "cursor"]);
        let params = self.params(&known)?;
        let mut filter = list_filter(&params)?;
        filter.query = filter
            .query
            .limit(params.limit()?)
            .cursor(params.get("cursor").map(str::to_owned));
        let order = filter.query.order;
        let page = list_page(self.exec()?, &filter)?;
        let errors = self.unreadable()?;
        Ok(json!({
            "items": page.items,
            "next_cursor": page.next_cursor,
            "order": order.as_str(),
            "scan": page.scan,
            "errors": errors,
        }))
    }

    pub(crate) fn execution(&self, id: String) -> ApiResult {
        check_id(&id)?;
        let store = self.exec()?;
        let exe = store
            .load(&id)?
            .ok_or_else(|| ApiError::not_found(format!("no execution {id}")))?;
        // The parent chain, root first.
        let mut ancestors = Vec::new();
        let mut parent = exe.parent_id.clone();
        let mut seen = HashSet::from([exe.id.clone()]);
        while let Some(pid) = parent {
            if ancestors.len() >= MAX_ANCESTORS || !seen.insert(pid.clone()) {
                break;
            }
            match store.load(&pid)? {
                Some(p) => {
                    parent = p.parent_id.clone();
                    ancestors.push(json!({ "id": pid, "summary": ExecutionSummary::of(&p) }));
                }
                None => {
                    ancestors.push(json!({ "id": pid, "summary": null }));
                    break;
                }
            }
        }
        ancestors.reverse();
        let mut children = Vec::new();
        for (child_id, join) in exe.children.iter().take(MAX_CHILDREN) {
            let summary = store.load(child_id)?.map(|c| ExecutionSummary::of(&c));
            children.push(json!({ "id": child_id, "join": join, "summary": summary }));
        }
        Ok(json!({
            "execution": exe,
            "ancestors": ancestors,
            "children": children,
            "children_total": exe.children.len(),
        }))
    }

    pub(crate) fn trace(&self, id: String) -> ApiResult {
        check_id(&id)?;
        if self.exec()?.load(&id)?.is_none() {
            return Err(ApiError::not_found(format!("no execution {id}")));
        }
        // `NaN`, `Infinity` and lone surrogates harel wrote, shown as text.
        let steps: Vec<_> = self
            .exec()?
            .read_trace(&id)?
            .iter()
            .map(pyjson::shown_object)
            .collect();
        Ok(json!({ "items": steps, "trace_max": self.exec()?.trace_max() }))
    }

    /// The archive bundle of the tree rooted at `id` (`control::bundle`): the same JSON
    /// `purge --archive` writes, read from a live execution too, so a download is a backup.
    pub(crate) fn bundle(&self, id: String) -> ApiResult {
        check_id(&id)?;
        self.params(&[])?;
        match control::bundle(self.exec()?, &id) {
            Err(StoreError::NotFound { .. }) => Err(ApiError::not_found(format!("no execution {id}"))),
            other => Ok(other?),
        }
    }

    /// An execution's armed timers, the outbox entries addressed to it and the spawn
    /// intents it issued. The store lists these store-wide only, so they are picked out of
    /// its listings (oldest first), at most [`SCAN_CAP`] entries of each read.
    pub(crate) fn pending(&self, id: String) -> ApiResult {
        check_id(&id)?;
        let store = self.exec()?;
        if store.load(&id)?.is_none() {
            return Err(ApiError::not_found(format!("no execution {id}")));
        }
        let mut truncated = false;
        let timers = scan(
            paging::timer_pages(store, ALL_TIMERS, None, MAX_PAGE),
            |t| t.execution_id == id,
            &mut truncated,
        )?;
        let outbox = scan(
            paging::outbox_pages(store, None, MAX_PAGE),
            |e| e.target_id.as_deref() == Some(id.as_str()),
            &mut truncated,
        )?;
        let mut spawns = scan(
            paging::spawn_pages(store, None, MAX_PAGE),
            |e| e.parent_id == id,
            &mut truncated,
        )?;
        for spawn in &mut spawns {
            spawn.context = pyjson::shown_object(&spawn.context);
        }
        Ok(json!({
            "timers": timers,
            "outbox": outbox,
            "spawns": spawns,
            "truncated": truncated,
            "now": self.now,
        }))
    }

    pub(crate) fn outbox(&self) -> ApiResult {
        let params = self.params(&["after", "limit"])?;
        let (after, limit) = (params.seq("after")?, params.limit()?);
        let items = self.exec()?.pending_outbox(after, limit)?;
        let next_after = (items.len() == limit)
            .then(|| items.last().map(|e| e.seq))
            .flatten();
        Ok(json!({ "items": items, "next_after": next_after, "now": self.now }))
    }

    pub(crate) fn spawns(&self) -> ApiResult {
        let params = self.params(&["after", "limit"])?;
        let (after, limit) = (params.seq("after")?, params.limit()?);
        let entries = self.exec()?.pending_spawns(after, limit)?;
        let next_after = (entries.len() == limit)
            .then(|| entries.last().map(|e| e.seq))
            .flatten();
        // A spawn intent has no time of its own: its parent's last commit is a lower bound
        // of how long it has waited (the fork was that commit or an earlier one).
        let parents = self.updated_at_of(entries.iter().map(|e| e.parent_id.as_str()))?;
        let mut items = Vec::with_capacity(entries.len());
        for mut entry in entries {
            entry.context = pyjson::shown_object(&entry.context);
            let updated = parents.get(&entry.parent_id).copied().flatten();
            let mut item = serde_json::to_value(&entry).map_err(|e| ApiError::internal(e.to_string()))?;
            if let Some(map) = item.as_object_mut() {
                map.insert("parent_updated_at".into(), json!(updated));
            }
            items.push(item);
        }
        Ok(json!({ "items": items, "next_after": next_after, "now": self.now }))
    }

    /// The `updated_at` of each execution of `ids` that exists: listings of at most
    /// [`PARENTS_A_READ`] ids each (`where id in (...)`, answered from the primary key), not a
    /// load per id (a round trip each on a server).
    fn updated_at_of<'i>(
        &self,
        ids: impl Iterator<Item = &'i str>,
    ) -> Result<HashMap<String, Option<f64>>, ApiError> {
        let mut seen = HashSet::new();
        let ids: Vec<&str> = ids.filter(|id| seen.insert(*id)).collect();
        let mut found = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(PARENTS_A_READ) {
            let filter = Filter {
                expr: Expr::Term(Term {
                    path: FilterPath::root("id"),
                    op: Op::In(
                        chunk
                            .iter()
                            .map(|id| FilterValue::Str((*id).to_owned()))
                            .collect(),
                    ),
                }),
            };
            let query = ListQuery::new()
                .order(ListOrder::Id)
                .limit(chunk.len())
                .filter(filter);
            for summary in self.exec()?.list_executions(&query)?.items {
                found.insert(summary.id, summary.updated_at);
            }
        }
        Ok(found)
    }

    pub(crate) fn timers(&self) -> ApiResult {
        let params = self.params(&["due_before", "cursor", "limit"])?;
        let due_before = params.time("due_before")?.unwrap_or(ALL_TIMERS);
        let limit = params.limit()?;
        let after = params.get("cursor").map(decode_timer_cursor).transpose()?;
        let items = self.exec()?.due_timers(due_before, after.as_ref(), limit)?;
        let next_cursor = (items.len() == limit)
            .then(|| items.last().map(encode_timer_cursor))
            .flatten();
        Ok(json!({ "items": items, "next_cursor": next_cursor, "now": self.now }))
    }
}

/// The entries of `pages` that `keep` picks, reading at most about [`SCAN_CAP`] entries: past
/// that (more pages to come) `truncated` is set.
fn scan<T>(
    pages: impl Iterator<Item = execstore::Result<Vec<T>>>,
    keep: impl Fn(&T) -> bool,
    truncated: &mut bool,
) -> Result<Vec<T>, ApiError> {
    let mut kept = Vec::new();
    let mut scanned = 0;
    for page in pages {
        let page = page?;
        scanned += page.len();
        let full = page.len() == MAX_PAGE;
        kept.extend(page.into_iter().filter(|entry| keep(entry)));
        if full && scanned >= SCAN_CAP {
            *truncated = true;
            break;
        }
    }
    Ok(kept)
}

/// The counts by status of the executions whose id starts with `prefix` that pass the
/// query's filters: a walk of that run of ids (the store counts by its own filters only).
fn count_prefix(
    store: &dyn ExecutionStore,
    query: ListQuery,
    prefix: &str,
) -> Result<Vec<(Status, u64)>, ApiError> {
    let mut query = query.count_filter()?.limit(MAX_PAGE);
    let mut counts: Vec<(Status, u64)> = Status::ALL.iter().map(|s| (*s, 0)).collect();
    loop {
        let page = search(store, query.clone(), prefix)?;
        for summary in &page.items {
            if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == summary.status) {
                slot.1 += 1;
            }
        }
        match page.next_cursor {
            Some(next) => query.cursor = Some(next),
            None => return Ok(counts),
        }
    }
}

/// The executions whose id starts with `prefix` that pass the query's filters, one page at
/// a time, by the store's keyset: ids starting with `prefix` are one run in id order, right
/// after `prefix` itself (its exact match is read on its own on the first page).
/// The query parameters that filter the executions list: `GET /api/executions` reads them
/// (with `limit` and `cursor`), and so does an action over everything matching
/// (`POST /api/control/{action}/matching`), through [`list_filter`].
pub(crate) const LIST_FILTERS: &[&str] = &[
    "status",
    "definition",
    "roots_only",
    "q",
    "created_after",
    "created_before",
    "updated_after",
    "updated_before",
    "finished_after",
    "finished_before",
    "search",
    "order",
    "where",
];

/// The executions list's filter: the listing query and, with `q`, the id prefix searched.
#[derive(Clone, Debug)]
pub(crate) struct ListFilter {
    pub(crate) query: ListQuery,
    pub(crate) prefix: Option<String>,
}

/// The filter [`LIST_FILTERS`] in `params` make: the one parser of the list's filter, and
/// its order (`order=updated`, the default, or `id`; `q`, an id prefix, lists by id).
pub(crate) fn list_filter(params: &Params) -> Result<ListFilter, ApiError> {
    let order = match (params.get("q"), params.get("order")) {
        (Some(_), _) => ListOrder::Id,
        (None, Some(order)) => order.parse::<ListOrder>()?,
        (None, None) => ListOrder::UpdatedDesc,
    };
    let mut list = ListQuery::new()
        .order(order)
        .roots_only(params.flag("roots_only")?)
        .created_between(params.moment("created_after")?, params.moment("created_before")?)
        .updated_between(params.moment("updated_after")?, params.moment("updated_before")?)
        .finished_between(
            params.moment("finished_after")?,
            params.moment("finished_before")?,
        );
    list.search = params.get("search").map(str::to_owned);
    if let Some(statuses) = params.statuses()? {
        list = list.status(statuses);
    }
    if let Some(definition) = params.get("definition") {
        list = list.definition(definition);
    }
    list.filter = crate::search::where_of(params)?;
    Ok(ListFilter {
        query: list,
        prefix: params.get("q").map(str::to_owned),
    })
}

/// One page of what `filter` matches (from its query's cursor, at most its limit).
pub(crate) fn list_page(store: &dyn ExecutionStore, filter: &ListFilter) -> Result<ExecutionPage, ApiError> {
    match &filter.prefix {
        Some(prefix) => search(store, filter.query.clone(), prefix),
        None => Ok(store.list_executions(&filter.query)?),
    }
}

fn search(store: &dyn ExecutionStore, mut query: ListQuery, prefix: &str) -> Result<ExecutionPage, ApiError> {
    execstore::kit::validate::check_id("q", prefix)?;
    let mut items = Vec::new();
    if query.cursor.is_none() {
        query.validated_after()?;
        if let Some(exe) = store.load(prefix)? {
            if query.matches_execution(&exe) {
                items.push(ExecutionSummary::of(&exe));
            }
        }
        query.cursor = Some(encode_cursor(prefix));
        if items.len() == query.limit {
            let scan = match &query.filter {
                Some(f) => execstore::executions::search::scanned_paths(f, &store.attributes()?),
                None => Vec::new(),
            };
            return Ok(ExecutionPage::default()
                .with_items(items, query.cursor)
                .scanned(scan));
        }
        query.limit -= items.len();
    }
    let page = store.list_executions(&query)?;
    let scan = page.scan;
    let mut next_cursor = page.next_cursor;
    for summary in page.items {
        if !summary.id.starts_with(prefix) {
            next_cursor = None;
            break;
        }
        items.push(summary);
    }
    Ok(ExecutionPage::default()
        .with_items(items, next_cursor)
        .scanned(scan))
}

//! A workspace's dead letters and leases (lapsed or not), a page at a time, consumer cursors
//! (with their lag), stored rules and a stored rule's version history.

use execstore::workspace::{Envelope, Timestamp};
use serde_json::{json, Value};

use super::ts;
use crate::{decode, ApiError, ApiResult, Call};

impl Call<'_> {
    /// A page of dead letters (of `rule`, or all), oldest first: `limit` of them (default
    /// [`DEFAULT_LIMIT`](crate::DEFAULT_LIMIT)) recorded after the position `after`, and
    /// `next_after` (the page's last position) while more follow.
    pub(crate) fn dead_letters(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&["rule", "after", "limit"])?;
        let (ws, _, _) = self.workspace(t, w)?;
        if let Some(rule) = params.get("rule") {
            execstore::kit::validate::check_id("rule", rule)?;
        }
        let (after, limit) = (params.seq("after")?.unwrap_or(0), params.limit()?);
        // One more than shown: whether another page follows.
        let mut letters = self
            .ws()?
            .dead_letters_page(&ws, params.get("rule"), after, limit + 1)?;
        let more = letters.len() > limit;
        letters.truncate(limit);
        let next_after = more.then(|| letters.last().map(|(p, _)| *p)).flatten();
        let items: Vec<Value> = letters
            .into_iter()
            .map(|(_, l)| Value::Object(l.doc().clone()))
            .collect();
        Ok(json!({ "items": items, "next_after": next_after }))
    }

    /// A page of lease rows by key: `limit` of them (default
    /// [`DEFAULT_LIMIT`](crate::DEFAULT_LIMIT)) after the key `after`, and `next_after` (the
    /// page's last key) while more follow.
    pub(crate) fn leases(&self, t: &str, w: &str) -> ApiResult {
        let params = self.ws_params(&["after", "limit"])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let limit = params.limit()?;
        let after = params.get("after");
        if let Some(after) = after {
            execstore::kit::validate::check_id("after", after)?;
        }
        let now = Timestamp::from_secs_f64(self.now).map_err(ApiError::from)?;
        // One more than shown: whether another page follows.
        let mut leases = self.ws()?.leases_page(&ws, after, limit + 1)?;
        let more = leases.len() > limit;
        leases.truncate(limit);
        let next_after = more.then(|| leases.last().map(|l| l.key.clone())).flatten();
        let items: Vec<Value> = leases
            .into_iter()
            .map(|l| {
                json!({
                    "key": l.key,
                    "holder": l.holder,
                    "expires_at": ts(l.expires_at),
                    "lapsed": l.expires_at <= now,
                })
            })
            .collect();
        Ok(json!({ "items": items, "next_after": next_after, "now": self.now }))
    }

    pub(crate) fn cursors(&self, t: &str, w: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, head, _) = self.workspace(t, w)?;
        let items: Vec<Value> = self
            .ws()?
            .cursors(&ws)?
            .into_iter()
            .map(|(name, seq)| json!({ "name": name, "seq": seq, "lag": head - seq }))
            .collect();
        Ok(json!({ "items": items, "head_seq": head }))
    }

    pub(crate) fn rules(&self, t: &str, w: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let items: Vec<Value> = self
            .ws()?
            .stored_rules(&ws)?
            .into_iter()
            .map(|r| {
                json!({
                    "name": r.name(),
                    "rule": Value::Object(r.rule.clone()),
                    "version": r.version,
                    "status": r.status.as_str(),
                    "provenance": Value::Object(r.provenance.clone()),
                })
            })
            .collect();
        Ok(json!({ "items": items }))
    }

    pub(crate) fn rule_history(&self, t: &str, w: &str, raw_name: &str) -> ApiResult {
        self.ws_params(&[])?;
        let (ws, _, _) = self.workspace(t, w)?;
        let name = decode(raw_name)?;
        execstore::kit::validate::check_id("name", &name)?;
        let items: Vec<Value> = self
            .ws()?
            .rule_history(&ws, &name)?
            .iter()
            .map(Envelope::to_value)
            .collect();
        if items.is_empty() {
            return Err(ApiError::not_found(format!(
                "no stored rule {name} in this workspace"
            )));
        }
        Ok(json!({ "name": name, "items": items }))
    }
}

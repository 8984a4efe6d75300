//! The API's one error type: a status, a code and a message, answered as
//! `{"error": {"code": ..., "message": ...}}`; and the status of each store error code.

use execstore::StoreError;
use serde_json::{json, Value};

use crate::ApiResponse;

/// A failed request: its status and the JSON error body.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: u16,
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

/// What an endpoint answers: its JSON body (status 200), or the error.
pub(crate) type ApiResult = Result<Value, ApiError>;

impl ApiError {
    pub(crate) fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(400, "BAD_REQUEST", message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(404, "NOT_FOUND", message)
    }

    pub(crate) fn internal(message: impl Into<String>) -> Self {
        ApiError::new(500, "INTERNAL", message)
    }

    pub(crate) fn into_response(self) -> ApiResponse {
        ApiResponse {
            status: self.status,
            body: json!({ "error": { "code": self.code, "message": self.message } }),
        }
    }
}

/// The HTTP status of each store error code (`StoreError::CODES`; a test checks that every
/// code is here): the caller's mistake (4xx) or the store's (5xx). A retryable backend failure
/// is 503.
pub(crate) const STORE_ERROR_STATUS: &[(&str, u16)] = &[
    ("CONFLICT", 409),
    ("INVALID_INPUT", 400),
    ("NOT_FOUND", 404),
    ("ALREADY_EXISTS", 409),
    ("CORRUPT", 500),
    ("BACKEND", 500),
];

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        let code = e.code();
        let status = if e.is_retryable() {
            503
        } else {
            // 500 too for a kind a newer core added before this table knew it.
            STORE_ERROR_STATUS
                .iter()
                .find(|(c, _)| *c == code)
                .map_or(500, |(_, status)| *status)
        };
        ApiError::new(status, code, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_store_error_code_has_its_status() {
        let table: Vec<&str> = STORE_ERROR_STATUS.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            table,
            StoreError::CODES,
            "one status per code of the core's, in its order"
        );
        for e in StoreError::examples() {
            let code = e.code();
            let message = e.to_string();
            let a = ApiError::from(e);
            assert_eq!((a.code, a.message.as_str()), (code, message.as_str()));
            // The examples' backend failure is retryable.
            let want = if code == "BACKEND" {
                503
            } else {
                STORE_ERROR_STATUS.iter().find(|(c, _)| *c == code).unwrap().1
            };
            assert_eq!(a.status, want, "{code}");
        }
        let permanent = StoreError::Backend {
            message: "disk full".into(),
            retryable: false,
            source: None,
        };
        assert_eq!(ApiError::from(permanent).status, 500);
    }
}

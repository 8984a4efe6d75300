//! The backend author's kit: what a backend of either contract needs beyond the contract
//! itself. [`validate`] holds the input checks and limits every backend applies the same way,
//! [`names`] the table names (harel's `harel_*` under a prefix), [`migration`] the stored
//! schema versions, and [`pyjson`] the JSON text exactly as Python's `json` writes it, so
//! files stay byte for byte those of the engines.

pub mod filter;
pub mod migration;
pub mod names;
pub mod pyjson;
pub mod validate;

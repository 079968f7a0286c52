//! The `.slm` v1 container (docs/slm-format.md).

pub mod chunks;
pub mod layout;
pub mod manifest;
pub mod reader;
pub mod writer;

//! What the Kubernetes API itself defines, held here so that the policy checks it as the API
//! server does: its name rules ([`names`]), which the settings are checked against when the
//! policy server loads them, its quantities ([`quantity`]), read exactly as device counts, and
//! the limits an object's size is held to ([`limits`]).

pub mod limits;
pub mod names;
pub mod quantity;

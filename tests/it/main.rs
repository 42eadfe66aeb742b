//! The one integration-test binary: the CLI, a fake provider over real HTTPS on
//! loopback, the proxy, and real clients.

mod cassettes;
mod proxy;
mod trace;
mod trace_wire;

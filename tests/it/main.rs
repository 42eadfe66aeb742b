//! The one integration-test binary: the CLI, a fake provider over real HTTPS on
//! loopback, the proxy, and real clients.

mod cassettes;
mod fake_provider;
mod proxy;
mod sdk_interop;
mod support;
mod trace;
mod trace_wire;

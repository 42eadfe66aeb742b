//! The one integration-test binary: the CLI, a fake provider over real HTTPS on
//! loopback, the proxy, and real clients.

mod trace;
mod trace_cli;
mod trace_wire;
mod judge;
mod spec;
mod spec_props;
mod cassettes;
mod fake_provider;
mod proxy;
mod sdk_interop;
mod support;

//! The one integration-test binary: the CLI, a fake provider over real HTTPS on
//! loopback, the proxy, and real clients.

mod baseline;
mod cassettes;
mod demos;
mod docs;
mod fake_provider;
mod judge;
mod project;
mod proxy;
mod report;
mod runner;
mod sdk_interop;
mod spec;
mod spec_props;
mod support;
mod trace;
mod trace_cli;
mod trace_wire;

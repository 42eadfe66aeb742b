//! The one table of base-URL routes: `http://127.0.0.1:PORT/NAME/…` on the
//! proxy forwards to `UPSTREAM/…`, for clients that ignore `HTTPS_PROXY`.

use std::collections::BTreeMap;

use crate::error::{Error, Result};

/// A built-in provider route and the client variable that points an SDK at it.
struct BuiltinRoute {
    /// The first path segment on the proxy.
    name: &'static str,
    /// The upstream origin the segment stands for.
    upstream: &'static str,
    /// The SDK's base-URL variable and the path its value ends with (OpenAI's SDKs
    /// expect the `/v1` in the base URL, Anthropic's and Gemini's do not).
    env: &'static [(&'static str, &'static str)],
}

/// The built-in routes. Spec `proxy.routes` add to (or override) these.
const BUILTIN_ROUTES: &[BuiltinRoute] = &[
    BuiltinRoute {
        name: "openai",
        upstream: "https://api.openai.com",
        env: &[("OPENAI_BASE_URL", "/v1")],
    },
    BuiltinRoute {
        name: "anthropic",
        upstream: "https://api.anthropic.com",
        env: &[("ANTHROPIC_BASE_URL", "")],
    },
    BuiltinRoute {
        name: "gemini",
        upstream: "https://generativelanguage.googleapis.com",
        env: &[("GOOGLE_GEMINI_BASE_URL", ""), ("GEMINI_BASE_URL", "")],
    },
];

/// One resolved route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The first path segment on the proxy (`openai`).
    pub name: String,
    /// The upstream base, without a trailing slash (`https://api.openai.com`).
    pub upstream: String,
    /// Client variables to export, with the path suffix their value needs.
    pub env: Vec<(String, String)>,
}

/// The routes a proxy serves: built-ins plus the spec's `proxy.routes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteTable {
    routes: Vec<Route>,
}

impl RouteTable {
    /// The built-in routes plus `extra` (name → upstream base URL); an extra route
    /// with a built-in name replaces it.
    pub fn new(extra: &BTreeMap<String, String>) -> Result<Self> {
        let mut routes: Vec<Route> = BUILTIN_ROUTES
            .iter()
            .filter(|b| !extra.contains_key(b.name))
            .map(|b| Route {
                name: b.name.to_string(),
                upstream: b.upstream.to_string(),
                env: b
                    .env
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            })
            .collect();
        for (name, upstream) in extra {
            let bad_name = name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
            if bad_name {
                return Err(Error::other(
                    format!("proxy.routes: route name {name:?} is not a single path segment"),
                    Some("use letters, digits, '-' and '_' only, e.g. `mistral`".into()),
                ));
            }
            let parsed = url::Url::parse(upstream).map_err(|e| {
                Error::other(
                    format!("proxy.routes.{name}: {upstream:?} is not a URL: {e}"),
                    Some("give an absolute URL such as https://api.mistral.ai".into()),
                )
            })?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                return Err(Error::other(
                    format!("proxy.routes.{name}: {upstream:?} must be an http(s) URL with a host"),
                    Some("give an absolute URL such as https://api.mistral.ai".into()),
                ));
            }
            let env_name = format!(
                "AGENTCI_ROUTE_{}_URL",
                name.to_ascii_uppercase().replace('-', "_")
            );
            routes.push(Route {
                name: name.clone(),
                upstream: upstream.trim_end_matches('/').to_string(),
                // Redirecting a built-in route (to a gateway or a test double) keeps
                // its SDK variables: OPENAI_BASE_URL must still point the SDK at it.
                env: match BUILTIN_ROUTES.iter().find(|b| b.name == name) {
                    Some(builtin) => builtin
                        .env
                        .iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                    None => vec![(env_name, String::new())],
                },
            });
        }
        Ok(RouteTable { routes })
    }

    /// The upstream URL for an origin-form request path (`/openai/v1/chat?x=1`),
    /// or `None` when no route's segment starts the path.
    pub fn resolve(&self, path_and_query: &str) -> Option<String> {
        let rest = path_and_query.strip_prefix('/')?;
        let seg_end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (name, tail) = rest.split_at(seg_end);
        let route = self.routes.iter().find(|r| r.name == name)?;
        if tail.starts_with('?') {
            return Some(format!("{}/{}", route.upstream, tail));
        }
        let tail = if tail.is_empty() { "/" } else { tail };
        Some(format!("{}{}", route.upstream, tail))
    }

    /// The base-URL variables for a proxy listening on `origin` (`http://127.0.0.1:PORT`).
    pub fn client_env(&self, origin: &str) -> Vec<(String, String)> {
        self.routes
            .iter()
            .flat_map(|r| {
                r.env
                    .iter()
                    .map(move |(k, suffix)| (k.clone(), format!("{origin}/{}{suffix}", r.name)))
            })
            .collect()
    }

    /// The route names, for error messages.
    pub fn names(&self) -> Vec<&str> {
        self.routes.iter().map(|r| r.name.as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RouteTable {
        let mut extra = BTreeMap::new();
        extra.insert("mistral".to_string(), "https://api.mistral.ai/".to_string());
        RouteTable::new(&extra).unwrap()
    }

    #[test]
    fn builtin_routes_map_to_provider_hosts() {
        let t = table();
        assert_eq!(
            t.resolve("/openai/v1/chat/completions").as_deref(),
            Some("https://api.openai.com/v1/chat/completions")
        );
        assert_eq!(
            t.resolve("/anthropic/v1/messages?beta=true").as_deref(),
            Some("https://api.anthropic.com/v1/messages?beta=true")
        );
        assert_eq!(
            t.resolve("/gemini/v1beta/models/x:generateContent")
                .as_deref(),
            Some("https://generativelanguage.googleapis.com/v1beta/models/x:generateContent")
        );
        assert_eq!(
            t.resolve("/mistral/v1/chat").as_deref(),
            Some("https://api.mistral.ai/v1/chat")
        );
        assert_eq!(
            t.resolve("/openai").as_deref(),
            Some("https://api.openai.com/")
        );
    }

    #[test]
    fn unknown_or_partial_segments_do_not_resolve() {
        let t = table();
        assert_eq!(t.resolve("/openaix/v1"), None);
        assert_eq!(t.resolve("/"), None);
        assert_eq!(t.resolve("v1/chat"), None);
    }

    #[test]
    fn client_env_points_sdks_at_the_routes() {
        let env = table().client_env("http://127.0.0.1:9");
        assert!(env.contains(&(
            "OPENAI_BASE_URL".into(),
            "http://127.0.0.1:9/openai/v1".into()
        )));
        assert!(env.contains(&(
            "ANTHROPIC_BASE_URL".into(),
            "http://127.0.0.1:9/anthropic".into()
        )));
        assert!(env.contains(&(
            "AGENTCI_ROUTE_MISTRAL_URL".into(),
            "http://127.0.0.1:9/mistral".into()
        )));
    }

    #[test]
    fn redirecting_a_builtin_route_keeps_its_sdk_variable() {
        let mut extra = BTreeMap::new();
        extra.insert("openai".to_string(), "https://127.0.0.1:8443".to_string());
        let t = RouteTable::new(&extra).unwrap();
        assert_eq!(
            t.resolve("/openai/v1/chat/completions").as_deref(),
            Some("https://127.0.0.1:8443/v1/chat/completions")
        );
        let env = t.client_env("http://127.0.0.1:9");
        assert!(
            env.contains(&(
                "OPENAI_BASE_URL".into(),
                "http://127.0.0.1:9/openai/v1".into()
            )),
            "{env:?}"
        );
        assert!(
            !env.iter().any(|(k, _)| k == "AGENTCI_ROUTE_OPENAI_URL"),
            "{env:?}"
        );
    }

    #[test]
    fn bad_extra_routes_are_rejected() {
        let mut extra = BTreeMap::new();
        extra.insert("a/b".to_string(), "https://x".to_string());
        assert!(RouteTable::new(&extra).is_err());
        let mut extra = BTreeMap::new();
        extra.insert("ok".to_string(), "ftp://x".to_string());
        assert!(RouteTable::new(&extra).is_err());
    }
}

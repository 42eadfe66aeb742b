//! The documentation stays true to the tree: every spec field in the JSON Schema
//! is described in docs/spec.md, and every relative link in README.md and
//! docs/*.md points at a file that exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every key of every `properties` object in a JSON Schema, at any depth.
fn property_names(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(props)) = map.get("properties") {
                out.extend(props.keys().cloned());
            }
            for value in map.values() {
                property_names(value, out);
            }
        }
        Value::Array(items) => {
            for item in items {
                property_names(item, out);
            }
        }
        _ => {}
    }
}

#[test]
fn every_spec_schema_property_is_documented_in_spec_md() {
    let schema: Value =
        serde_json::from_str(&read(&repo().join("docs/agentci_spec.schema.json"))).unwrap();
    let mut names = BTreeSet::new();
    property_names(&schema, &mut names);
    // Guards the walk itself: the spec has dozens of fields.
    assert!(names.len() > 50, "found only {names:?} in the schema");

    let doc = read(&repo().join("docs/spec.md"));
    let missing: Vec<&String> = names
        .iter()
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/spec.md does not mention these schema properties (as `name`): {missing:?}"
    );
}

/// Relative link targets of a Markdown text: inline `[text](target)` and
/// reference definitions `[label]: target`, outside fenced code blocks and
/// inline code. External (`scheme:`) and same-page (`#…`) links are left out;
/// `#fragment` and `?query` are cut off.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut in_fence = false;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let text = strip_inline_code(line);
        let mut targets = Vec::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find([')', ' ']).unwrap_or(after.len());
            targets.push(after[..end].trim_matches(['<', '>']).to_string());
            rest = &after[end..];
        }
        if let Some(def) = reference_definition(text.trim_start()) {
            targets.push(def);
        }
        for target in targets {
            let path = target.split(['#', '?']).next().unwrap_or_default();
            let external = target.contains("://") || target.starts_with("mailto:");
            if !external && !path.is_empty() {
                links.push(path.to_string());
            }
        }
    }
    links
}

/// The target of a reference definition line (`[label]: target`).
fn reference_definition(line: &str) -> Option<String> {
    let rest = line.strip_prefix('[')?;
    let (label, after) = rest.split_once("]:")?;
    if label.is_empty() || label.contains(']') {
        return None;
    }
    after.split_whitespace().next().map(str::to_string)
}

/// The line without its `inline code` spans.
fn strip_inline_code(line: &str) -> String {
    line.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, part)| part)
        .collect::<Vec<_>>()
        .join(" ")
}

fn markdown_files() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

#[test]
fn relative_markdown_links_point_at_existing_files() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in markdown_files() {
        let dir = file.parent().unwrap();
        for link in relative_links(&read(&file)) {
            checked += 1;
            if !dir.join(&link).exists() {
                let shown = file.strip_prefix(repo()).unwrap_or(&file);
                broken.push(format!("{}: {link}", shown.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found");
    assert!(
        broken.is_empty(),
        "links to missing files:\n{}",
        broken.join("\n")
    );
}

#[test]
fn link_extraction_skips_code_external_and_same_page_links() {
    let markdown = "\
See [the spec](spec.md#root), [CI](./ci.md), [site](https://example.com/x.md),
[top](#top), `[not](code.md)` and [report](<report.schema.json>).

```yaml
url: [fenced](fenced.md)
```
[ref]: ../README.md
[ext]: https://example.com
";
    assert_eq!(
        relative_links(markdown),
        vec!["spec.md", "./ci.md", "report.schema.json", "../README.md"]
    );
}

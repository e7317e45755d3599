//! [`ToolPlan`]: the tool specs of a step, serialized once, with the index the executor looks a
//! call's tool up in; [`ToolRegistry`]: the current specs, handing out a new plan (and a new
//! generation) only when they change.
//!
//! A request and the execution of the calls its answer makes must see the same tools: the request
//! holds an `Arc` of its plan, and the executor looks each call up in that plan, whatever the
//! registry holds by then.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::item::{Execution, ResponseItem, json_type};

#[cfg(feature = "testing")]
thread_local! {
    static SERIALIZATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times this thread serialized a plan's tool specs so far (the `testing` feature): a
/// test reads it around some requests to check that their tools were serialized once, when the
/// plan was built, and never per request.
#[cfg(feature = "testing")]
pub fn tool_plan_serializations() -> u64 {
    SERIALIZATIONS.with(std::cell::Cell::get)
}

/// Where a spec sits in a plan: its position in the list of tools, and for a member of a
/// `namespace` tool its position in that namespace's `tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ToolPosition {
    /// The 0-based position in the plan's list of tools.
    pub index: usize,
    /// The 0-based position among the namespace's members, for a member of a `namespace` tool.
    pub member: Option<usize>,
}

impl ToolPosition {
    fn top(index: usize) -> Self {
        ToolPosition {
            index,
            member: None,
        }
    }
}

impl fmt::Display for ToolPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.member {
            None => write!(f, "tool {}", self.index),
            Some(member) => write!(f, "member {member} of tool {}", self.index),
        }
    }
}

/// Building a [`ToolPlan`] failed: a spec of the wrong shape, or two tools with one name. Every
/// variant names the spec.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolPlanError {
    /// A spec (or a namespace member) is not a JSON object.
    #[error("{position} is {found}, not a tool spec object")]
    NotAnObject {
        /// The spec.
        position: ToolPosition,
        /// What it is: "a string", "null", …
        found: &'static str,
    },
    /// A spec lacks what its calls are found by: a string `type`; a string `name` for a
    /// `function`, `custom` or `namespace` tool; a `tools` array for a `namespace`. Or a
    /// namespace member is neither a `function` nor a `custom` tool.
    #[error("{position} is not a usable tool spec: {reason}")]
    InvalidSpec {
        /// The spec.
        position: ToolPosition,
        /// What is wrong, e.g. "a `function` tool without a string `name`".
        reason: &'static str,
    },
    /// Two tools a call cannot tell apart: two top-level tools with one name (`function`,
    /// `custom` and `namespace` tools share one set of names, as providers require), two members
    /// of one namespace with one name, or a second tool of a type the plan holds once
    /// (`local_shell`, `tool_search`, web search, `image_generation`; `name` is then the type).
    #[error("{second} repeats {} of {first}", qualified(.namespace.as_deref(), .name))]
    DuplicateName {
        /// The namespace, for two members of one namespace.
        namespace: Option<String>,
        /// The name (or the type, for a tool the plan holds once).
        name: String,
        /// The first spec with it.
        first: ToolPosition,
        /// The second.
        second: ToolPosition,
    },
    /// The specs could not be serialized.
    #[error("cannot serialize the tool specs")]
    Serialize {
        /// What serde_json found.
        #[source]
        source: serde_json::Error,
    },
}

fn qualified(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("the name `{name}` in namespace `{namespace}`"),
        None => format!("the name `{name}`"),
    }
}

/// The tool a call asks for: what an executor looks up in the [`ToolPlan`] of the request the
/// call answers. [`ToolCallKey::of`] reads it off a call item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolCallKey<'a> {
    /// A `function_call`: a `function` tool by name, or, with a namespace, a `function` member of
    /// the `namespace` tool of that name.
    Function {
        /// The call's `namespace`.
        namespace: Option<&'a str>,
        /// The call's `name`.
        name: &'a str,
    },
    /// A `custom_tool_call`: a `custom` tool by name, or, with a namespace, a `custom` member of
    /// the `namespace` tool of that name.
    Custom {
        /// The call's `namespace`.
        namespace: Option<&'a str>,
        /// The call's `name`.
        name: &'a str,
    },
    /// A `local_shell_call`: the `local_shell` tool.
    LocalShell,
    /// A `tool_search_call`: the `tool_search` tool.
    ToolSearch {
        /// Where the call says the search runs.
        execution: &'a Execution,
    },
    /// A `web_search_call`: the web search tool (`web_search`, `web_search_preview` or a dated
    /// variant of either).
    WebSearch,
    /// An `image_generation_call`: the `image_generation` tool.
    ImageGeneration,
}

impl<'a> ToolCallKey<'a> {
    /// The tool `item` calls, or `None` when it is not a call (a message, an output, a
    /// compaction, …).
    ///
    /// Every item the model can make a tool call with maps to one key: `function_call`,
    /// `custom_tool_call`, `local_shell_call`, `tool_search_call`, `web_search_call`,
    /// `image_generation_call`.
    pub fn of(item: &'a ResponseItem) -> Option<ToolCallKey<'a>> {
        // Exhaustive: a new item kind does not compile until someone decides whether it calls a
        // tool.
        match item {
            ResponseItem::FunctionCall(call) => Some(ToolCallKey::Function {
                namespace: call.namespace.as_deref(),
                name: &call.name,
            }),
            ResponseItem::CustomToolCall(call) => Some(ToolCallKey::Custom {
                namespace: call.namespace.as_deref(),
                name: &call.name,
            }),
            ResponseItem::LocalShellCall(_) => Some(ToolCallKey::LocalShell),
            ResponseItem::ToolSearchCall(call) => Some(ToolCallKey::ToolSearch {
                execution: &call.execution,
            }),
            ResponseItem::WebSearchCall(_) => Some(ToolCallKey::WebSearch),
            ResponseItem::ImageGenerationCall(_) => Some(ToolCallKey::ImageGeneration),
            ResponseItem::Message(_)
            | ResponseItem::AgentMessage(_)
            | ResponseItem::Reasoning(_)
            | ResponseItem::FunctionCallOutput(_)
            | ResponseItem::CustomToolCallOutput(_)
            | ResponseItem::ToolSearchOutput(_)
            | ResponseItem::Compaction(_)
            | ResponseItem::ContextCompaction(_)
            | ResponseItem::AdditionalTools(_)
            | ResponseItem::CompactionTrigger
            | ResponseItem::Other => None,
        }
    }
}

/// Who runs a call: the harness (which answers it with an output item) or the provider (which
/// already ran it; the call needs no output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Runner {
    /// The harness executes the call: `function`, `custom`, `local_shell`, and a `tool_search`
    /// whose call is not marked `"execution":"server"`.
    Client,
    /// The provider executed it: web search, `image_generation`, and a `tool_search` call marked
    /// `"execution":"server"`.
    Provider,
}

/// The tool that handles a call, as a [`ToolPlan`] answers it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolMatch<'a> {
    /// The generation of the plan that answered.
    pub generation: u64,
    /// Where the spec sits in the plan.
    pub position: ToolPosition,
    /// The spec: for a namespace member, the member's own spec.
    pub spec: &'a Value,
    /// Who runs the call.
    pub runner: Runner,
}

/// The names a namespace tool's calls are found by.
#[derive(Debug, Default)]
struct NamespaceIndex {
    index: usize,
    functions: HashMap<String, usize>,
    customs: HashMap<String, usize>,
}

/// Where each call family's tools sit in the plan.
#[derive(Debug, Default)]
struct Index {
    functions: HashMap<String, usize>,
    customs: HashMap<String, usize>,
    namespaces: HashMap<String, NamespaceIndex>,
    local_shell: Option<usize>,
    tool_search: Option<usize>,
    web_search: Option<usize>,
    image_generation: Option<usize>,
}

/// What kind of tool a spec is, by its `type`.
enum SpecKind<'a> {
    Function(&'a str),
    Custom(&'a str),
    Namespace(&'a str, &'a [Value]),
    LocalShell,
    ToolSearch,
    WebSearch,
    ImageGeneration,
    /// A type this crate models no call for (`file_search`, `mcp`, …): sent, never looked up.
    Other,
}

fn spec_kind(spec: &Value, position: ToolPosition) -> Result<SpecKind<'_>, ToolPlanError> {
    let Some(object) = spec.as_object() else {
        return Err(ToolPlanError::NotAnObject {
            position,
            found: json_type(spec),
        });
    };
    let invalid = |reason| ToolPlanError::InvalidSpec { position, reason };
    let name = |reason| {
        object
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(reason))
    };
    let Some(kind) = object.get("type").and_then(Value::as_str) else {
        return Err(invalid("no string `type`"));
    };
    Ok(match kind {
        "function" => SpecKind::Function(name("a `function` tool without a string `name`")?),
        "custom" => SpecKind::Custom(name("a `custom` tool without a string `name`")?),
        "namespace" => {
            let name = name("a `namespace` tool without a string `name`")?;
            let Some(Value::Array(members)) = object.get("tools") else {
                return Err(invalid("a `namespace` tool without a `tools` array"));
            };
            SpecKind::Namespace(name, members)
        }
        "local_shell" => SpecKind::LocalShell,
        "tool_search" => SpecKind::ToolSearch,
        // `web_search_preview` and the dated variants (`web_search_2025_08_26`, …) make the same
        // `web_search_call` items.
        "web_search" => SpecKind::WebSearch,
        kind if kind.starts_with("web_search_") => SpecKind::WebSearch,
        "image_generation" => SpecKind::ImageGeneration,
        _ => SpecKind::Other,
    })
}

impl Index {
    fn build(specs: &[Value]) -> Result<Index, ToolPlanError> {
        let mut index = Index::default();
        // Function, custom and namespace tools share one set of top-level names.
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (at, spec) in specs.iter().enumerate() {
            match spec_kind(spec, ToolPosition::top(at))? {
                SpecKind::Function(name) => {
                    claim(&mut names, name, at)?;
                    index.functions.insert(name.to_owned(), at);
                }
                SpecKind::Custom(name) => {
                    claim(&mut names, name, at)?;
                    index.customs.insert(name.to_owned(), at);
                }
                SpecKind::Namespace(name, members) => {
                    claim(&mut names, name, at)?;
                    let namespace = NamespaceIndex::build(at, name, members)?;
                    index.namespaces.insert(name.to_owned(), namespace);
                }
                SpecKind::LocalShell => once(&mut index.local_shell, "local_shell", at)?,
                SpecKind::ToolSearch => once(&mut index.tool_search, "tool_search", at)?,
                SpecKind::WebSearch => once(&mut index.web_search, "web_search", at)?,
                SpecKind::ImageGeneration => {
                    once(&mut index.image_generation, "image_generation", at)?
                }
                SpecKind::Other => {}
            }
        }
        Ok(index)
    }
}

impl NamespaceIndex {
    fn build(index: usize, namespace: &str, members: &[Value]) -> Result<Self, ToolPlanError> {
        let mut built = NamespaceIndex {
            index,
            ..NamespaceIndex::default()
        };
        let mut names: HashMap<&str, usize> = HashMap::new();
        for (member, spec) in members.iter().enumerate() {
            let position = ToolPosition {
                index,
                member: Some(member),
            };
            let (name, map) = match spec_kind(spec, position)? {
                SpecKind::Function(name) => (name, &mut built.functions),
                SpecKind::Custom(name) => (name, &mut built.customs),
                _ => {
                    return Err(ToolPlanError::InvalidSpec {
                        position,
                        reason: "a namespace member that is neither a `function` nor a `custom` tool",
                    });
                }
            };
            if let Some(&first) = names.get(name) {
                let first = ToolPosition {
                    index,
                    member: Some(first),
                };
                return Err(duplicate(Some(namespace), name, first, position));
            }
            names.insert(name, member);
            map.insert(name.to_owned(), member);
        }
        Ok(built)
    }
}

/// Records that the top-level tool at `at` has `name`, unless an earlier one has it.
fn claim<'a>(
    names: &mut HashMap<&'a str, usize>,
    name: &'a str,
    at: usize,
) -> Result<(), ToolPlanError> {
    if let Some(&first) = names.get(name) {
        let (first, second) = (ToolPosition::top(first), ToolPosition::top(at));
        return Err(duplicate(None, name, first, second));
    }
    names.insert(name, at);
    Ok(())
}

fn duplicate(
    namespace: Option<&str>,
    name: &str,
    first: ToolPosition,
    second: ToolPosition,
) -> ToolPlanError {
    ToolPlanError::DuplicateName {
        namespace: namespace.map(str::to_owned),
        name: name.to_owned(),
        first,
        second,
    }
}

/// Records the one tool of a type the plan holds once.
fn once(slot: &mut Option<usize>, kind: &str, at: usize) -> Result<(), ToolPlanError> {
    match *slot {
        Some(first) => Err(duplicate(
            None,
            kind,
            ToolPosition::top(first),
            ToolPosition::top(at),
        )),
        None => {
            *slot = Some(at);
            Ok(())
        }
    }
}

/// The tools of a step: an immutable list of tool specs (each a JSON object, passed on as given),
/// with a generation number, their JSON serialized once, and an index of which spec handles
/// which call.
///
/// A [`ToolRegistry`] builds one per change of its tools and hands it out as an `Arc`. A
/// [`PromptCompiler`](super::PromptCompiler) puts it in each request it makes, and the body
/// writer copies its serialized bytes. An executor looks the calls of the answer up in the
/// request's plan ([`ToolPlan::lookup`]), so they reach the tools the model was shown even when
/// the registry has changed in between. Which spec handles each call family:
/// `docs/architecture.md`, "The tool plan of a step".
///
/// # Examples
///
/// ```
/// use agent_history::{ResponseItem, Runner, ToolPlan};
/// use serde_json::json;
///
/// let plan = ToolPlan::new(vec![
///     json!({"type":"function","name":"shell","parameters":{"type":"object"}}),
///     json!({"type":"web_search"}),
/// ])?;
/// assert_eq!(plan.json(), r#"[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"web_search"}]"#);
///
/// let call: ResponseItem = serde_json::from_str(
///     r#"{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}"#,
/// )?;
/// let found = plan.lookup_item(&call).expect("the plan offers `shell`");
/// assert_eq!((found.position.index, found.runner), (0, Runner::Client));
///
/// // Two tools with one name cannot be told apart by a call.
/// assert!(ToolPlan::new(vec![json!({"type":"function","name":"shell"}), json!({"type":"custom","name":"shell"})]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ToolPlan {
    generation: u64,
    specs: Vec<Value>,
    /// The specs as the body's `tools` array, serialized once when the plan was built; `None`
    /// for no tools (`[]`), which needs no serializing (and so no error path).
    json: Option<Box<RawValue>>,
    index: Index,
}

impl fmt::Debug for ToolPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolPlan")
            .field("generation", &self.generation)
            .field("json", &self.json())
            .finish_non_exhaustive()
    }
}

impl Default for ToolPlan {
    /// No tools, generation 0.
    fn default() -> Self {
        ToolPlan::empty()
    }
}

impl ToolPlan {
    /// A plan of `specs`, in their order, with generation 0 (a [`ToolRegistry`] numbers the plans
    /// it makes). Serializes the specs once.
    ///
    /// # Errors
    ///
    /// [`ToolPlanError::NotAnObject`] and [`ToolPlanError::InvalidSpec`] for a spec that is not
    /// an object or lacks what its calls are found by, [`ToolPlanError::DuplicateName`] for two
    /// tools a call cannot tell apart, [`ToolPlanError::Serialize`] if serde_json refuses a spec.
    pub fn new(specs: Vec<Value>) -> Result<ToolPlan, ToolPlanError> {
        ToolPlan::with_generation(specs, 0)
    }

    /// No tools (the body's `"tools":[]`), generation 0.
    pub fn empty() -> ToolPlan {
        ToolPlan {
            generation: 0,
            specs: Vec::new(),
            json: None,
            index: Index::default(),
        }
    }

    fn with_generation(specs: Vec<Value>, generation: u64) -> Result<ToolPlan, ToolPlanError> {
        let index = Index::build(&specs)?;
        let json = if specs.is_empty() {
            None
        } else {
            #[cfg(feature = "testing")]
            SERIALIZATIONS.with(|count| count.set(count.get() + 1));
            let json = serde_json::value::to_raw_value(&specs)
                .map_err(|source| ToolPlanError::Serialize { source })?;
            Some(json)
        };
        Ok(ToolPlan {
            generation,
            specs,
            json,
            index,
        })
    }

    /// The generation: 0 for a plan made by [`ToolPlan::new`]; in a [`ToolRegistry`], one more
    /// than the plan before for each change of the tools. It numbers one registry's plans: plans
    /// of two registries, or made apart, are not told apart by it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The tool specs, in the order they are sent.
    pub fn specs(&self) -> &[Value] {
        &self.specs
    }

    /// How many tools (top-level specs) the plan has.
    pub fn len(&self) -> usize {
        self.specs.len()
    }

    /// Whether the plan has no tools.
    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The specs as a JSON array: the bytes of the request body's `tools`, serialized when the
    /// plan was built.
    pub fn json(&self) -> &str {
        self.json.as_deref().map_or("[]", RawValue::get)
    }

    /// The tool that handles a call with this key, or `None` when the plan offers none (the
    /// model named a tool it was not shown). Time: O(1) expected.
    pub fn lookup(&self, key: ToolCallKey<'_>) -> Option<ToolMatch<'_>> {
        let index = &self.index;
        // The index was built from these specs: every position in it is there.
        let top = |at: Option<&usize>| {
            let at = *at?;
            Some((ToolPosition::top(at), self.specs.get(at)?))
        };
        let member =
            |namespace: &str, pick: fn(&NamespaceIndex) -> &HashMap<String, usize>, name: &str| {
                let found = index.namespaces.get(namespace)?;
                let member = *pick(found).get(name)?;
                let spec = self.specs.get(found.index)?.get("tools")?.get(member)?;
                Some((
                    ToolPosition {
                        index: found.index,
                        member: Some(member),
                    },
                    spec,
                ))
            };
        let (found, runner) = match key {
            ToolCallKey::Function {
                namespace: None,
                name,
            } => (top(index.functions.get(name)), Runner::Client),
            ToolCallKey::Function {
                namespace: Some(namespace),
                name,
            } => (member(namespace, |n| &n.functions, name), Runner::Client),
            ToolCallKey::Custom {
                namespace: None,
                name,
            } => (top(index.customs.get(name)), Runner::Client),
            ToolCallKey::Custom {
                namespace: Some(namespace),
                name,
            } => (member(namespace, |n| &n.customs, name), Runner::Client),
            ToolCallKey::LocalShell => (top(index.local_shell.as_ref()), Runner::Client),
            ToolCallKey::ToolSearch { execution } => {
                let runner = match execution {
                    Execution::Server => Runner::Provider,
                    Execution::Client | Execution::Other(_) => Runner::Client,
                };
                (top(index.tool_search.as_ref()), runner)
            }
            ToolCallKey::WebSearch => (top(index.web_search.as_ref()), Runner::Provider),
            ToolCallKey::ImageGeneration => {
                (top(index.image_generation.as_ref()), Runner::Provider)
            }
        };
        let (position, spec) = found?;
        Some(ToolMatch {
            generation: self.generation,
            position,
            spec,
            runner,
        })
    }

    /// The tool that handles the call `item`: [`ToolPlan::lookup`] of [`ToolCallKey::of`].
    /// `None` when `item` is not a call, or calls a tool the plan does not offer.
    pub fn lookup_item(&self, item: &ResponseItem) -> Option<ToolMatch<'_>> {
        self.lookup(ToolCallKey::of(item)?)
    }
}

/// The body's `tools`: the bytes serialized when the plan was built, passed on as a raw value.
impl Serialize for ToolPlan {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.json {
            Some(json) => json.serialize(serializer),
            None => serializer.collect_seq(std::iter::empty::<()>()),
        }
    }
}

/// The tools a runtime offers now: owns the current specs and hands out [`ToolPlan`] snapshots
/// as `Arc`s. Each change that alters what the model is shown (the serialized specs) makes a new
/// plan with the next generation; a change that leaves them as they were keeps the current plan
/// and its generation. A plan handed out never changes: requests made with it, and the lookups
/// of their calls, keep seeing it.
///
/// # Examples
///
/// ```
/// use agent_history::ToolRegistry;
/// use serde_json::json;
///
/// let mut registry = ToolRegistry::default();
/// let first = registry.add(json!({"type":"function","name":"shell"}))?;
/// assert_eq!(first.generation(), 1);
/// // The same specs again: nothing changes, the generation stays.
/// let same = registry.set(vec![json!({"type":"function","name":"shell"})])?;
/// assert!(std::sync::Arc::ptr_eq(&first, &same));
/// let second = registry.update(|specs| specs.push(json!({"type":"local_shell"})))?;
/// assert_eq!((second.generation(), second.len(), first.len()), (2, 2, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
// Not `Clone`: two copies would number different plans with one generation.
#[derive(Debug, Default)]
pub struct ToolRegistry {
    plan: Arc<ToolPlan>,
}

impl ToolRegistry {
    /// A registry whose first plan, generation 0, holds `specs`.
    ///
    /// # Errors
    ///
    /// As [`ToolPlan::new`].
    pub fn new(specs: Vec<Value>) -> Result<ToolRegistry, ToolPlanError> {
        Ok(ToolRegistry {
            plan: Arc::new(ToolPlan::new(specs)?),
        })
    }

    /// The current plan. Time: O(1) (an `Arc` clone).
    pub fn plan(&self) -> Arc<ToolPlan> {
        Arc::clone(&self.plan)
    }

    /// The current plan's generation.
    pub fn generation(&self) -> u64 {
        self.plan.generation
    }

    /// Replaces the specs with `specs` and returns the current plan: a new one with the next
    /// generation when the serialized specs differ from the current plan's, the current one
    /// otherwise.
    ///
    /// # Errors
    ///
    /// As [`ToolPlan::new`]; the registry then keeps its current plan.
    pub fn set(&mut self, specs: Vec<Value>) -> Result<Arc<ToolPlan>, ToolPlanError> {
        let next = ToolPlan::with_generation(specs, self.plan.generation + 1)?;
        // Compared as bytes, what the model is shown: a key order change is a change.
        if next.json() != self.plan.json() {
            self.plan = Arc::new(next);
        }
        Ok(self.plan())
    }

    /// Edits a copy of the current specs with `edit` (add, remove, replace any number at once)
    /// and sets the result, as [`ToolRegistry::set`]: one new generation for the whole edit, none
    /// if it changed nothing.
    ///
    /// # Errors
    ///
    /// As [`ToolPlan::new`]; the registry then keeps its current plan.
    pub fn update(
        &mut self,
        edit: impl FnOnce(&mut Vec<Value>),
    ) -> Result<Arc<ToolPlan>, ToolPlanError> {
        let mut specs = self.plan.specs.clone();
        edit(&mut specs);
        self.set(specs)
    }

    /// Adds `spec` after the current specs, as [`ToolRegistry::update`].
    ///
    /// # Errors
    ///
    /// As [`ToolPlan::new`]: [`ToolPlanError::DuplicateName`] when a tool of that name is
    /// already there; the registry then keeps its current plan.
    pub fn add(&mut self, spec: Value) -> Result<Arc<ToolPlan>, ToolPlanError> {
        self.update(|specs| specs.push(spec))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn web_search_variants_are_one_tool_and_other_types_none() {
        for kind in [
            "web_search",
            "web_search_preview",
            "web_search_2025_08_26",
            "web_search_preview_2025_03_11",
        ] {
            let plan = ToolPlan::new(vec![json!({"type": kind})]).expect("a plan");
            assert_eq!(plan.index.web_search, Some(0), "{kind}");
        }
        let plan = ToolPlan::new(vec![json!({"type":"websearch"}), json!({"type":"mcp"})])
            .expect("a plan");
        assert_eq!(plan.index.web_search, None);
        assert!(plan.index.functions.is_empty() && plan.index.namespaces.is_empty());
    }

    #[test]
    fn positions_and_duplicate_messages_name_the_spec() {
        assert_eq!(ToolPosition::top(3).to_string(), "tool 3");
        let member = ToolPosition {
            index: 2,
            member: Some(1),
        };
        assert_eq!(member.to_string(), "member 1 of tool 2");
        let error = ToolPlan::new(vec![json!({"type":"namespace","name":"fs","tools":[
            {"type":"function","name":"read"},
            {"type":"function","name":"read"},
        ]})])
        .expect_err("duplicate member");
        assert_eq!(
            error.to_string(),
            "member 1 of tool 0 repeats the name `read` in namespace `fs` of member 0 of tool 0"
        );
    }

    /// The plan's `Serialize` impl, its `json` and serde's bytes for the specs are one text.
    #[test]
    fn serialize_gives_the_bytes_built_once() {
        let specs = vec![
            json!({"type":"function","name":"a","parameters":{"b":1,"a":2}}),
            json!({"type":"local_shell"}),
        ];
        let plan = ToolPlan::new(specs.clone()).expect("a plan");
        let expected = serde_json::to_string(&specs).expect("serializes");
        assert_eq!(plan.json(), expected);
        assert_eq!(serde_json::to_string(&plan).expect("serializes"), expected);
        assert_eq!(
            format!("{plan:?}"),
            format!("ToolPlan {{ generation: 0, json: {expected:?}, .. }}")
        );
    }

    /// A failed edit leaves the registry's plan and generation where they were.
    #[test]
    fn a_refused_edit_changes_nothing() {
        let mut registry = ToolRegistry::new(vec![json!({"type":"local_shell"})]).expect("a plan");
        let before = registry.plan();
        let error = registry
            .update(|specs| {
                specs.push(json!({"type":"function","name":"x"}));
                specs.push(json!({"type":"local_shell"}));
            })
            .expect_err("two local shells");
        assert!(matches!(
            error,
            ToolPlanError::DuplicateName { ref name, second: ToolPosition { index: 2, member: None }, .. } if name == "local_shell"
        ));
        assert!(Arc::ptr_eq(&before, &registry.plan()));
        assert_eq!(registry.generation(), 0);
    }
}

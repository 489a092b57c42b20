//! An MPIJob's launcher (behaviour.md §3.12): what it passes to its ranks, added to its first
//! container, where mpi-operator runs `mpirun` and puts its own env. Only `env` entries, each
//! where the container has none of that name: a launcher gains no device, claim, mount, volume
//! or sidecar for its ranks.

use super::added::Container;
use super::container::container_name;
use crate::error::{Error, malformed};
use crate::json::JsonType;
use crate::json::object::{Node, Object};
use crate::json::write::RenderedItems;
use crate::merge::{Read, add_env, expect_read, object_mut};
use crate::mpi::Passing;

/// Adds `passing`'s entries to the pod's first container, but for those it gained already in
/// this request, as `wired` (what the pod's GPU containers gained) says (the merge reads back
/// only the request's entries); what it gained, where it has one.
pub(super) fn wire<'a>(
    pod: &mut Object<'_>,
    passing: &Passing<'a>,
    wired: &[Container<'a>],
) -> Result<Option<Container<'a>>, Error> {
    if passing.env.is_empty() {
        return Ok(None);
    }
    let Some(spec) = object_mut(pod, "spec")? else {
        return Ok(None);
    };
    expect_read(spec, "containers", Read::List);
    let first = match spec.get_mut("containers") {
        None => return Ok(None),
        Some(Node::List(containers)) => containers.first_mut(),
        Some(node) if node.is_null() => return Ok(None),
        Some(_) => return Err(malformed("spec.containers", JsonType::List)),
    };
    let container = match first {
        None => return Ok(None),
        Some(Node::Object(container)) => container,
        Some(_) => return Err(malformed("spec.containers[0]", JsonType::Object)),
    };
    let mut gained = Container::named(container_name(container, 0));
    let mut added: Vec<&str> = Vec::new();
    for wired in wired.iter().filter(|c| c.name == gained.name) {
        for var in &wired.env {
            added.push(&var.name);
        }
    }
    let vars = RenderedItems::new(passing.env.iter());
    gained.env = add_env(container, &vars, &added).map_err(|e| e.within("spec.containers[0]"))?;
    Ok(Some(gained).filter(|gained| !gained.is_empty()))
}

/// `gained`, the launcher's container's part, merged into `containers`, what the pod's GPU
/// containers gained in the pod's order: it is the first container.
pub(super) fn merge<'a>(containers: &mut Vec<Container<'a>>, gained: Container<'a>) {
    match containers.first_mut() {
        Some(first) if first.name == gained.name => first.env.extend(gained.env),
        _ => containers.insert(0, gained),
    }
}

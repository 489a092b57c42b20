//! What a pod that names neither machine nor pool gets (behaviour.md §3.5): the block's device and
//! its count. Such a pod may land on any GPU node, so the device is that of the largest group of
//! nodes that offer a fabric (never a group without one: its pods are kept off by rows and pools,
//! and a fallback of no device would leave the others without the fabric), and the count per GPU
//! is the smallest among the shapes that offer that device, so that the pod fits on every one of
//! them. The request itself keeps the pod off the nodes that lack the device, where it could not
//! use the fabric anyway.

use crate::count::per_gpu_text;
use crate::fabric::Fabric;
use crate::shape::Shape;
use crate::write::Written;

/// The shape whose fabric the block requests: the largest with a fabric, else the largest.
pub fn main(shapes: &[Shape]) -> Option<&Shape> {
    shapes
        .iter()
        .find(|s| s.fabric != Fabric::None)
        .or(shapes.first())
}

/// The dedicated devices per node and GPUs per node of the shape with the fewest per GPU among
/// those that offer `main`'s device (`main`'s own where it is not dedicated).
pub fn smallest<'s>(shapes: &'s [Shape], main: &'s Shape) -> &'s Shape {
    let ratio = |s: &Shape| match s.fabric {
        Fabric::Dedicated { devices, .. } => Some((devices, s.gpus.max(1))),
        _ => None,
    };
    let mut best = main;
    for s in shapes
        .iter()
        .filter(|s| s.fabric.requested_alike(&main.fabric))
    {
        if let (Some((d, g)), Some((bd, bg))) = (ratio(s), ratio(best))
            && u128::from(d) * u128::from(bg) < u128::from(bd) * u128::from(g)
        {
            best = s;
        }
    }
    best
}

/// The header's lines on the fallback, where the GPU nodes differ.
pub fn say(out: &mut Written, shapes: &[Shape], main: &Shape) {
    let differ: Vec<String> = shapes
        .iter()
        .filter(|s| !std::ptr::eq(*s, main) && !s.fabric.requested_alike(&main.fabric))
        .map(|s| format!("{} ({})", s.title(), s.fabric.describe(s.gpus)))
        .collect();
    let low = smallest(shapes, main);
    let counts_differ = shapes
        .iter()
        .any(|s| s.fabric.requested_alike(&main.fabric) && s.fabric != main.fabric);
    if differ.is_empty() && !counts_differ {
        return;
    }
    let mut line = "The GPU nodes differ.".to_owned();
    if let (Fabric::Dedicated { resource, devices }, true) = (&low.fabric, counts_differ) {
        line.push_str(&format!(
            " A pod that names neither machine nor pool gets {} {resource} per GPU, the fewest of the nodes that offer it ({}: {devices} for {} GPUs), so that it fits on each of them.",
            per_gpu_text(*devices, low.gpus),
            low.title(),
            low.gpus
        ));
    } else if let Some(resource) = main.fabric.resource() {
        line.push_str(&format!(
            " A pod that names neither machine nor pool gets {resource}, as {} offers it.",
            main.title()
        ));
    }
    if !differ.is_empty() {
        line.push_str(&format!(
            " Its request keeps it off the nodes of another fabric or none, where it could not use the fabric: {}.",
            differ.join("; ")
        ));
    }
    line.push_str(
        " The rows and pools below give a pod that names its machine or pool that machine's own.",
    );
    out.header.push(line);
}

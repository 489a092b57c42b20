//! The API server's limits on an object that the policy's additions count against.

/// The most bytes a pod's annotations may total, keys and values: kubernetes apimachinery
/// `pkg/api/validation/objectmeta.go`, `TotalAnnotationSizeLimitB = 256 * 1024`, which
/// `ValidateAnnotationsSize` compares with the sum of `len(k) + len(v)` over the annotations.
pub const MAX_ANNOTATIONS_SIZE: usize = 256 * 1024;

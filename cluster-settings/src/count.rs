//! Devices per GPU, D/P, as a settings value: a whole number where it is one, else a decimal of
//! at most six places (the policy's limit, behaviour.md §1.4), rounded up so that a pod never
//! gets fewer devices than its share.

use serde_yaml::Value;

/// The most GPUs a row may give a node (behaviour.md §1.2).
pub const MAX_GPUS: u64 = 64;

/// D/P as the settings' per-GPU value.
pub fn per_gpu(devices: u64, gpus: u64) -> Value {
    let gpus = gpus.max(1);
    if devices.is_multiple_of(gpus) {
        return Value::from(devices / gpus);
    }
    let millionths = devices.saturating_mul(1_000_000).div_ceil(gpus);
    Value::from(millionths as f64 / 1_000_000.0)
}

/// D/P in a comment.
pub fn per_gpu_text(devices: u64, gpus: u64) -> String {
    match per_gpu(devices, gpus) {
        Value::Number(n) => n.to_string(),
        _ => format!("{devices}/{gpus}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_gpu_values() {
        assert_eq!(per_gpu(32, 8), Value::from(4u64));
        assert_eq!(per_gpu(4, 8), Value::from(0.5));
        assert_eq!(per_gpu(10, 3), Value::from(3.333334));
    }
}

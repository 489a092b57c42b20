//! GCP's fabric blocks: TCPXO's networks, `gcp.tcpx` and `gcp.rdma`.

use crate::generators::settings::env_setting;
use proptest::prelude::*;
use proptest::sample::select;
use serde_json::Value;
use serde_json::json;

pub(crate) const TCPXO_NETWORKS: [&str; 8] = [
    "vpc1", "vpc2", "vpc3", "vpc4", "vpc5", "vpc6", "vpc7", "vpc8",
];

/// TCPX daemon flags: argv items, with the blanks, quotes and backslashes of Google's manifest
/// (`--setup_param "--verbose 128 2 0 "`), an empty item, a single quote.
pub(crate) fn tcpx_flags() -> Vec<Value> {
    vec![
        json!([]),
        json!([
            "--gpu_nic_preset",
            "a3vm",
            "--gpu_shmem_type",
            "fd",
            "--uds_path",
            "/run/tcpx",
            "--setup_param",
            "\\\"--verbose 128 2 0 \\\""
        ]),
        json!(["--setup_param", "\"--verbose 128 2 0 \""]),
        json!(["--label='a b'", "it's", "", "  two  blanks  "]),
    ]
}

/// `gcp.tcpx`: the TCPX fabric's own block.
pub(crate) fn tcpx_block() -> BoxedStrategy<Option<Value>> {
    proptest::option::weighted(
        0.35,
        (
            proptest::option::weighted(0.4, Just(json!(["vpc1", "vpc2", "vpc3", "vpc4"]))),
            proptest::option::weighted(
                0.3,
                Just(json!(
                    "us-docker.pkg.dev/gce-ai-infra/gpudirect-tcpx/tcpgpudmarxd-dev:v2.0.15"
                )),
            ),
            proptest::option::weighted(0.6, select(tcpx_flags())),
            env_setting(),
        )
            .prop_map(|(networks, image, flags, env)| {
                let mut block = json!({});
                for (key, value) in [
                    ("networks", networks),
                    ("daemonImage", image),
                    ("daemonFlags", flags),
                    ("env", env),
                ] {
                    if let Some(value) = value {
                        block[key] = value;
                    }
                }
                block
            }),
    )
    .boxed()
}

/// `gcp.rdma`: the RDMA fabric's own block, 1 to 16 networks.
pub(crate) fn rdma_block() -> BoxedStrategy<Option<Value>> {
    proptest::option::weighted(
        0.35,
        (
            proptest::option::weighted(
                0.5,
                (1usize..=16)
                    .prop_map(|n| json!((0..n).map(|i| format!("rdma-{i}")).collect::<Vec<_>>())),
            ),
            env_setting(),
        )
            .prop_map(|(networks, env)| {
                let mut block = json!({});
                if let Some(networks) = networks {
                    block["networks"] = networks;
                }
                if let Some(env) = env {
                    block["env"] = env;
                }
                block
            }),
    )
    .boxed()
}

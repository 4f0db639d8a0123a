//! What the moto end-to-end tests share: moto's URL (scripts/moto.sh;
//! `scripts/test.sh` sets GPUFORM_TEST_MOTO_URL) and boto3 from moto's
//! virtualenv, the other client that looks at what gpuform made (never
//! gpuform's own SDK client: an oracle does not reuse the code under test).
#![allow(dead_code)]

pub mod killing_proxy;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn moto_url() -> String {
    std::env::var("GPUFORM_TEST_MOTO_URL").unwrap_or_else(|_| {
        panic!("GPUFORM_TEST_MOTO_URL is not set: start moto with `scripts/moto.sh` (or run `scripts/test.sh`)")
    })
}

/// moto's virtualenv python (with boto3), as scripts/moto.sh makes it.
pub fn python() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-moto/bin/python");
    assert!(
        p.exists(),
        "{} is missing: run scripts/moto.sh",
        p.display()
    );
    p
}

/// Runs a boto3 script against moto in `region` with `ec2` and `s3` bound
/// to EC2 and S3 clients; the script prints JSON, which is returned.
pub fn boto3(region: &str, script: &str) -> Value {
    let prelude = format!(
        "import boto3, json\nec2 = boto3.client('ec2', region_name='{region}', endpoint_url='{url}', aws_access_key_id='testing', aws_secret_access_key='testing')\ns3 = boto3.client('s3', region_name='{region}', endpoint_url='{url}', aws_access_key_id='testing', aws_secret_access_key='testing')\n",
        url = moto_url()
    );
    let out = Command::new(python())
        .arg("-c")
        .arg(format!("{prelude}{script}"))
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "boto3 script failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("script prints JSON")
}

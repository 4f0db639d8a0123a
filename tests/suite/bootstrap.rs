//! Node bootstrap: every rendered document passes cloud-init's own schema
//! validator and every script passes shellcheck (the Debian packages
//! `cloud-init` and `shellcheck`, installed by `.ci/run`); the scripts are
//! run in a throwaway root with recording stand-ins for nvidia-smi, mkfs,
//! mdadm, mount, kubeadm, k3s and the package managers, and the exact
//! sequence of commands is checked, twice (the second run is a no-op); and a
//! join token given at apply time reaches the cloud but never the state,
//! the journal, a plan file or the output.

use crate::support;

use gpuform::bootstrap::{self, placeholder::Placeholder, split_multipart, Driver, NodePlan};
use gpuform::resolve::{resolve, ResolveOptions, USER_DATA_SHA256};
use gpuform::spec::{load_str, Vars};
use gpuform_catalog::Catalog;
use std::path::{Path, PathBuf};
use std::process::Command;

const STANDINS: &str = include_str!("bootstrap/standins.sh");
const COMMANDS: &[&str] = &[
    "nvidia-smi",
    "mkfs",
    "mdadm",
    "mount",
    "mountpoint",
    "blkid",
    "kubeadm",
    "k3s",
    "curl",
    "apt-get",
    "dpkg",
    "gpg",
    "dnf",
    "systemctl",
    "nvidia-ctk",
    "sleep",
];

fn tool(name: &str) -> PathBuf {
    let p = Path::new("/usr/bin").join(name);
    assert!(
        p.exists(),
        "{name} is not installed: `apt-get install -y cloud-init shellcheck` (.ci/run does)"
    );
    p
}

/// The documents of every node of a spec, by address.
fn documents(text: &str) -> Vec<(String, String)> {
    let loaded = load_str("spec.yaml", text, &Vars::default()).expect("spec loads");
    let opts = ResolveOptions {
        sandbox: true,
        ..ResolveOptions::default()
    };
    let desired = resolve(&loaded, Catalog::builtin(), &opts).expect("spec resolves");
    desired
        .resources
        .iter()
        .filter_map(|r| {
            let sha = r.attrs.get(USER_DATA_SHA256)?.as_str()?;
            Some((r.address.to_string(), desired.documents[sha].clone()))
        })
        .collect()
}

const MIG_POOL: &str = "project: p\nclusters:\n  pool:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: A100-80GB:8\n    mig: 3g.40gb\n    local_nvme: /data\n    user_data: |\n      #!/bin/bash\n      echo hello from the user\n";
const MIXED: &str = "project: p\nclusters:\n  pool:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: H100:1\n    image: ubuntu-22.04\n    mig: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]\n    driver: 550\n";
const K3S: &str = "project: p\nclusters:\n  train:\n    cloud: aws\n    region: us-east-1\n    nodes: 3\n    gpu: A100-40GB:8\n    kubernetes:\n      mode: k3s\n      token_env: K3S_TOKEN\n      version: v1.30.6+k3s1\n      taint: nvidia.com/gpu=present:NoSchedule\n";
const K3S_MIXED: &str = "project: p\nclusters:\n  infer:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: H100:1\n    mig: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]\n    kubernetes:\n      mode: k3s\n      token_env: K3S_TOKEN\n      version: v1.28.15+k3s1\n      taint: dedicated=gpu:NoSchedule\n      dcgm_exporter: true\n      addons: [kubeflow-training-operator]\n";
const KUBEADM: &str = "project: p\nclusters:\n  infer:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: T4\n    image: amazon-linux-2023\n    local_nvme: true\n    kubernetes:\n      mode: kubeadm-join\n      token_env: GPUFORM_TEST_JOIN_TOKEN\n      endpoint: 10.1.0.10:6443\n      ca_cert_hash: sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n";

fn all_documents() -> Vec<(String, String)> {
    let mut docs = Vec::new();
    for spec in [MIG_POOL, MIXED, K3S, K3S_MIXED, KUBEADM] {
        docs.extend(documents(spec));
    }
    for example in [
        "examples/mig-inference.yaml",
        "examples/training-k3s-nvme.yaml",
    ] {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(example)).unwrap();
        docs.extend(documents(&text));
    }
    // AMD: no catalog offers MI300X yet, so render its plan directly.
    let amd = NodePlan {
        cluster: "amd".into(),
        gpu_model: "MI300X".into(),
        gpu_count: 8,
        gpu_memory_mib: 192 * 1024,
        nvidia: false,
        driver: Some(Driver::Rocm("6.2".into())),
        mig: None,
        nvme: Some((1, "/scratch".into())),
        kube: None,
        token_env: None,
        taint: None,
        dcgm_exporter: false,
        kubeflow_training_operator: false,
        user_data: Some("#cloud-config\npackages: [htop]\n".into()),
    };
    docs.push(("amd".into(), amd.render().document));
    docs
}

/// Every file of the cloud-config part's `write_files`: (path, content, permissions).
fn write_files(cloud_config: &str) -> Vec<(String, String, String)> {
    let v: serde_yaml::Value = serde_yaml::from_str(cloud_config).expect("cloud-config is YAML");
    v["write_files"]
        .as_sequence()
        .expect("write_files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().unwrap().to_string(),
                f["content"].as_str().unwrap().to_string(),
                f["permissions"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn every_document_passes_cloud_init_schema_and_every_script_shellcheck() {
    let (cloud_init, shellcheck) = (tool("cloud-init"), tool("shellcheck"));
    let dir = tempfile::tempdir().unwrap();
    let docs = all_documents();
    assert!(docs.len() >= 10, "{} documents", docs.len());
    let mut checked_scripts = 0;
    for (address, doc) in &docs {
        let parts = split_multipart(doc);
        assert_eq!(parts[0].0, "text/cloud-config", "{address}");
        for (i, (kind, body)) in parts.iter().enumerate() {
            let file = dir.path().join(format!("part{i}"));
            std::fs::write(&file, body).unwrap();
            let out = match kind.as_str() {
                "text/cloud-config" => Command::new(&cloud_init)
                    .args(["schema", "--config-file"])
                    .arg(&file)
                    .output()
                    .unwrap(),
                "text/x-shellscript" => Command::new(&shellcheck).arg(&file).output().unwrap(),
                other => panic!("{address}: unexpected part {other}"),
            };
            assert!(
                out.status.success(),
                "{address} part {i} ({kind}) rejected:\n{}{}\n---\n{body}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        for (path, content, _) in write_files(&parts[0].1) {
            if !path.ends_with(".sh") {
                continue;
            }
            let file = dir.path().join("script.sh");
            std::fs::write(&file, &content).unwrap();
            let out = Command::new(&shellcheck).arg(&file).output().unwrap();
            assert!(
                out.status.success(),
                "{address} {path}:\n{}\n---\n{content}",
                String::from_utf8_lossy(&out.stdout)
            );
            checked_scripts += 1;
        }
    }
    assert!(checked_scripts >= 20, "{checked_scripts} scripts");
}

#[test]
fn the_checks_catch_a_broken_document() {
    // The validators are not rubber stamps: a wrong type and an unquoted
    // variable are refused.
    let dir = tempfile::tempdir().unwrap();
    let cc = dir.path().join("cc.yaml");
    std::fs::write(&cc, "#cloud-config\nruncmd: 5\n").unwrap();
    let out = Command::new(tool("cloud-init"))
        .args(["schema", "--config-file"])
        .arg(&cc)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let sh = dir.path().join("s.sh");
    std::fs::write(&sh, "#!/bin/bash\nx=$1\nrm -rf $x/data\n").unwrap();
    let out = Command::new(tool("shellcheck")).arg(&sh).output().unwrap();
    assert!(!out.status.success());
}

/// A throwaway root: the document's files written under it, the stand-ins
/// on PATH, an Ubuntu 22.04 os-release, and `nvme` local disks plus the
/// root EBS disk in its /sys/block.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new(doc: &str, nvme: u32) -> Root {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let bin = r.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let standin = r.join("standins.sh");
        std::fs::write(&standin, STANDINS).unwrap();
        for c in COMMANDS {
            std::os::unix::fs::symlink(&standin, bin.join(c)).unwrap();
        }
        Command::new("chmod")
            .arg("+x")
            .arg(&standin)
            .status()
            .unwrap();
        for d in [
            "etc/apt/sources.list.d",
            "etc/yum.repos.d",
            "etc/default",
            "usr/share/keyrings",
        ] {
            std::fs::create_dir_all(r.join(d)).unwrap();
        }
        std::fs::write(
            r.join("etc/os-release"),
            "ID=ubuntu\nVERSION_ID=\"22.04\"\nVERSION_CODENAME=jammy\n",
        )
        .unwrap();
        for i in 0..=nvme {
            let dev = r.join(format!("sys/block/nvme{i}n1/device"));
            std::fs::create_dir_all(&dev).unwrap();
            let model = if i == 0 {
                "Amazon Elastic Block Store"
            } else {
                "Amazon EC2 NVMe Instance Storage"
            };
            std::fs::write(dev.join("model"), model).unwrap();
        }
        let parts = split_multipart(doc);
        for (path, content, mode) in write_files(&parts[0].1) {
            let p = r.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, content).unwrap();
            Command::new("chmod").arg(&mode).arg(&p).status().unwrap();
        }
        Root { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Runs the entry script as cloud-init's runcmd would, returning the
    /// commands it ran (stand-in calls), minus read-only queries.
    fn run(&self) -> Vec<String> {
        let log = self.path().join("calls.log");
        let _ = std::fs::remove_file(&log);
        let out = Command::new("bash")
            .arg(self.path().join("usr/local/lib/gpuform/bootstrap.sh"))
            .env("GPUFORM_ROOT", self.path())
            .env(
                "PATH",
                format!("{}:/usr/bin:/bin", self.path().join("bin").display()),
            )
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "bootstrap failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let root = self.path().display().to_string();
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|l| {
                !(l.contains("--query-gpu")
                    || l.contains(" -lgi")
                    || l.starts_with("blkid ")
                    || l.starts_with("mountpoint ")
                    || l == &"nvidia-smi ")
            })
            .map(|l| l.replace(&root, "$ROOT"))
            .collect()
    }
}

fn lines(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn mig_on_eight_a100s_and_raid0_over_eight_nvme_disks_run_as_intended_and_once() {
    let docs = documents(MIG_POOL);
    let (_, doc) = &docs[0];
    let root = Root::new(doc, 8);
    let calls = root.run();
    let mut want = lines(&[
        "mdadm --create /dev/md/gpuform-data --run --level=0 --raid-devices=8 /dev/nvme1n1 /dev/nvme2n1 /dev/nvme3n1 /dev/nvme4n1 /dev/nvme5n1 /dev/nvme6n1 /dev/nvme7n1 /dev/nvme8n1",
        "mkfs -t ext4 -F -L gpuform-data /dev/md/gpuform-data",
        "mount /data",
    ]);
    for i in 0..8 {
        want.push(format!("nvidia-smi -i {i} -mig 1"));
        want.push(format!("nvidia-smi mig -i {i} -cgi 3g.40gb,3g.40gb -C"));
    }
    want.push("systemctl enable gpuform-mig.service".into());
    assert_eq!(calls, want);
    let fstab = std::fs::read_to_string(root.path().join("etc/fstab")).unwrap();
    assert_eq!(
        fstab,
        "LABEL=gpuform-data /data ext4 defaults,nofail,x-systemd.device-timeout=30s 0 2\n"
    );
    // Two 3g.40gb GPU instances on every GPU.
    for i in 0..8 {
        let gi = std::fs::read_to_string(root.path().join(format!("fake/gi{i}"))).unwrap();
        assert_eq!(gi, "3g.40gb\n3g.40gb\n");
    }
    // Idempotent: the second run changes nothing.
    assert_eq!(root.run(), lines(&["systemctl enable gpuform-mig.service"]));
    assert_eq!(
        std::fs::read_to_string(root.path().join("etc/fstab")).unwrap(),
        fstab
    );
    // The MIG unit alone (what runs at every later boot) leaves a right layout alone
    // and repairs a wrong one.
    std::fs::write(root.path().join("fake/gi3"), "7g.80gb\n").unwrap();
    let out = Command::new("bash")
        .arg(root.path().join("usr/local/lib/gpuform/mig.sh"))
        .env("GPUFORM_ROOT", root.path())
        .env(
            "PATH",
            format!("{}:/usr/bin:/bin", root.path().join("bin").display()),
        )
        .output()
        .unwrap();
    assert!(out.status.success());
    let log = std::fs::read_to_string(root.path().join("calls.log")).unwrap();
    let changes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" -cgi") || l.contains(" -dgi") || l.contains(" -dci"))
        .collect();
    assert_eq!(
        changes,
        vec![
            "nvidia-smi mig -i 3 -dci",
            "nvidia-smi mig -i 3 -dgi",
            "nvidia-smi mig -i 3 -cgi 3g.40gb,3g.40gb -C"
        ]
    );
    // The user's own part is kept, after gpuform's.
    let parts = split_multipart(doc);
    assert_eq!(
        parts[1],
        (
            "text/x-shellscript".to_string(),
            "#!/bin/bash\necho hello from the user\n".to_string()
        )
    );
}

#[test]
fn a_mixed_layout_and_the_driver_install_run_in_order() {
    let docs = documents(MIXED);
    let root = Root::new(&docs[0].1, 0);
    std::fs::create_dir_all(root.path().join("fake")).unwrap();
    std::fs::write(root.path().join("fake/no-driver"), "").unwrap();
    let calls = root.run();
    let arch = String::from_utf8(Command::new("uname").arg("-m").output().unwrap().stdout).unwrap();
    let arch = arch.trim();
    assert_eq!(
        calls,
        vec![
            format!("curl -fsSL -o $ROOT/var/lib/gpuform/cuda-keyring.deb https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/{arch}/cuda-keyring_1.1-1_all.deb"),
            "dpkg -i $ROOT/var/lib/gpuform/cuda-keyring.deb".into(),
            "apt-get update -q".into(),
            "apt-get install -y -q cuda-drivers-550".into(),
            "curl -fsSL -o $ROOT/var/lib/gpuform/nvidia-container-toolkit.gpgkey https://nvidia.github.io/libnvidia-container/gpgkey".into(),
            "gpg --batch --yes --dearmor -o $ROOT/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg $ROOT/var/lib/gpuform/nvidia-container-toolkit.gpgkey".into(),
            "curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list".into(),
            "apt-get update -q".into(),
            "apt-get install -y -q nvidia-container-toolkit".into(),
            "nvidia-smi -pm 1".into(),
            "nvidia-smi -i 0 -mig 1".into(),
            "nvidia-smi mig -i 0 -cgi 3g.40gb,2g.20gb,1g.10gb,1g.10gb -C".into(),
            "systemctl enable gpuform-mig.service".into(),
        ]
    );
    let list = std::fs::read_to_string(
        root.path()
            .join("etc/apt/sources.list.d/nvidia-container-toolkit.list"),
    )
    .unwrap();
    assert!(
        list.contains("[signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg]"),
        "{list}"
    );
    assert_eq!(root.run(), lines(&["systemctl enable gpuform-mig.service"]));
}

fn fill(doc: &str, token: &str, server: &str) -> String {
    bootstrap::fill(doc, |p| match p {
        Placeholder::Env(_) => Ok(token.to_string()),
        Placeholder::DepAttr(_, attr) if attr == "private_ip" => Ok(server.to_string()),
        // A credential (base64 of a DER): a stand-in named after it.
        Placeholder::Secret(name) => Ok(format!("DER{}", name.replace(['.', '-'], ""))),
        other => Err(format!("{other:?}")),
    })
    .unwrap()
}

#[test]
fn k3s_server_and_agents_join_over_the_private_address_once() {
    let docs = documents(K3S);
    assert_eq!(docs.len(), 3);
    let labels = "--node-label gpuform.io/cluster=train --node-label gpuform.io/gpu=A100-40GB --node-label nvidia.com/gpu.present=true --node-label nvidia.com/gpu.product=A100-40GB --node-label nvidia.com/gpu.count=8 --node-label nvidia.com/gpu.memory=40960";
    // The server stays untainted so that k3s's own pods have a node.
    let taint = " --node-taint nvidia.com/gpu=present:NoSchedule";
    for (address, doc) in &docs {
        let server = address.ends_with("node[0]");
        assert_eq!(
            doc.contains("@@GPUFORM_REF:k3s_server.private_ip@@"),
            !server,
            "{address}"
        );
        // Only the server is given credentials, and never the admin CA's key.
        assert_eq!(doc.contains("@@GPUFORM_SECRET:"), server, "{address}");
        assert!(!doc.contains("admin-ca.key"), "{address}");
        let root = Root::new(&fill(doc, "K10token.canary", "10.0.0.5"), 8);
        let calls: Vec<String> = root
            .run()
            .into_iter()
            .filter(|c| {
                !c.starts_with("mdadm") && !c.starts_with("mkfs") && !c.starts_with("mount")
            })
            .collect();
        let mut want = vec![
            "curl -fsSL -o $ROOT/var/lib/gpuform/k3s-install.sh https://get.k3s.io".to_string(),
        ];
        if server {
            // The server gets the agent token only; k3s makes its own server token.
            want.push(
                "env K3S_URL= K3S_TOKEN= K3S_AGENT_TOKEN=K10token.canary INSTALL_K3S_VERSION=v1.30.6+k3s1"
                    .into(),
            );
            want.push(format!("k3s server {labels}"));
            want.push("systemctl restart k3s".into());
        } else {
            want.push("env K3S_URL=https://10.0.0.5:6443 K3S_TOKEN=K10token.canary K3S_AGENT_TOKEN= INSTALL_K3S_VERSION=v1.30.6+k3s1".into());
            want.push(format!("k3s agent {labels}{taint}"));
        }
        assert_eq!(calls, want, "{address}");
        if server {
            let r = root.path();
            let read = |p: &str| std::fs::read_to_string(r.join(p)).unwrap();
            let tls = "var/lib/rancher/k3s/server/tls";
            let pem = |kind: &str, body: &str| {
                format!("-----BEGIN {kind}-----\n{body}\n-----END {kind}-----\n")
            };
            assert_eq!(
                read(&format!("{tls}/server-ca.crt")),
                pem("CERTIFICATE", "DERservercacrt")
            );
            assert_eq!(
                read(&format!("{tls}/server-ca.key")),
                pem("PRIVATE KEY", "DERservercakey")
            );
            // The API server trusts k3s's own client CA and the admin CA.
            assert_eq!(
                read("var/lib/gpuform/k3s/client-ca-bundle.crt"),
                format!("PEM k3s-client-ca\n{}", pem("CERTIFICATE", "DERadmincacrt"))
            );
            assert!(
                read("etc/rancher/k3s/config.yaml.d/50-gpuform-admin-ca.yaml")
                    .contains("client-ca-file=/var/lib/gpuform/k3s/client-ca-bundle.crt")
            );
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(r.join(format!("{tls}/server-ca.key")))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o077, 0, "the key is the owner's only");
            // The manifests k3s deploys, before its first start.
            let m = "var/lib/rancher/k3s/server/manifests";
            // k3s v1.30 ships RuntimeClass nvidia itself.
            assert!(!r
                .join(format!("{m}/gpuform-nvidia-runtimeclass.yaml"))
                .exists());
            let dp = read(&format!("{m}/gpuform-nvidia-device-plugin.yaml"));
            assert!(
                dp.contains("{name: MIG_STRATEGY, value: none}")
                    && dp.contains("k8s-device-plugin:v0.17.1"),
                "{dp}"
            );
        }
        assert!(root.run().is_empty(), "{address}: second run not a no-op");
    }
}

#[test]
fn kubeadm_join_uses_the_endpoint_hash_and_token() {
    let docs = documents(KUBEADM);
    // g4dn.xlarge: one local NVMe disk.
    let root = Root::new(&fill(&docs[0].1, "abcdef.0123456789abcdef", "unused"), 1);
    // Amazon Linux 2023 image without CUDA: the driver is installed from dnf.
    std::fs::write(
        root.path().join("etc/os-release"),
        "ID=amzn\nVERSION_ID=\"2023\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.path().join("fake")).unwrap();
    std::fs::write(root.path().join("fake/no-driver"), "").unwrap();
    let calls = root.run();
    let arch = String::from_utf8(Command::new("uname").arg("-m").output().unwrap().stdout).unwrap();
    let arch = arch.trim();
    assert_eq!(
        calls,
        vec![
            format!("dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/amzn2023/{arch}/cuda-amzn2023.repo"),
            "dnf -y module install nvidia-driver:550-dkms".into(),
            "curl -fsSL -o $ROOT/etc/yum.repos.d/nvidia-container-toolkit.repo https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo".into(),
            "dnf -y install nvidia-container-toolkit".into(),
            "nvidia-smi -pm 1".into(),
            "mkfs -t ext4 -F -L gpuform-data /dev/nvme1n1".into(),
            "mount /data".into(),
            "nvidia-ctk runtime configure --runtime=containerd --set-as-default".into(),
            "systemctl restart containerd".into(),
            "kubeadm join 10.1.0.10:6443 --token abcdef.0123456789abcdef --discovery-token-ca-cert-hash sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef".into(),
        ]
    );
    let kubelet = std::fs::read_to_string(root.path().join("etc/default/kubelet")).unwrap();
    assert_eq!(
        kubelet,
        "KUBELET_EXTRA_ARGS=--node-labels=gpuform.io/cluster=infer,gpuform.io/gpu=T4,nvidia.com/gpu.present=true,nvidia.com/gpu.product=T4,nvidia.com/gpu.count=1,nvidia.com/gpu.memory=16384\n"
    );
    assert!(root.run().is_empty());
}

#[test]
fn a_layout_over_the_slice_budget_is_a_located_error_showing_the_budget() {
    let text = "project: p\nclusters:\n  pool:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: A100-80GB:8\n    mig: [4g.40gb, 3g.40gb, 1g.10gb]\n";
    let loaded = load_str("spec.yaml", text, &Vars::default()).unwrap();
    let err = resolve(&loaded, Catalog::builtin(), &ResolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("spec.yaml:8:"), "{err}");
    assert!(
        err.contains("8 compute and 9 memory slices; one GPU has 7 compute and 8 memory slices"),
        "{err}"
    );
    assert!(err.contains("3g.40gb (3c/4m, ≤2)"), "{err}");
    // A GPU without MIG.
    let text = text
        .replace("A100-80GB:8", "T4")
        .replace("[4g.40gb, 3g.40gb, 1g.10gb]", "1g.5gb");
    let loaded = load_str("spec.yaml", &text, &Vars::default()).unwrap();
    let err = resolve(&loaded, Catalog::builtin(), &ResolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("T4 does not support MIG"), "{err}");
    // Local NVMe asked of a type without it (p3.16xlarge: EBS only): a note,
    // so that a portable spec moves to clouds whose disks the catalog lacks.
    let text = "project: p\nclusters:\n  c:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: V100-16GB:8\n    local_nvme: /scratch\n";
    let loaded = load_str("spec.yaml", text, &Vars::default()).unwrap();
    let desired = resolve(&loaded, Catalog::builtin(), &ResolveOptions::default()).unwrap();
    assert!(
        desired.notes.iter().any(|n| n.contains(
            "cluster.c: aws p3.16xlarge has no local NVMe disks gpuform knows of; `local_nvme` is not set up"
        )),
        "{:?}",
        desired.notes
    );
    assert!(
        desired.documents.is_empty(),
        "nothing to set up on a CUDA image"
    );
}

#[test]
fn bad_bootstrap_settings_fail_validation_at_their_line() {
    for (field, bad, says) in [
        ("local_nvme", "data", "absolute mount path"),
        ("driver", "'550; reboot'", "driver version"),
        ("user_data", "echo hi", "cloud-init cannot tell"),
        // Found by cloud-init's own validator, run by `gpuform validate`.
        (
            "user_data",
            "\"#cloud-config\\nruncmd: 5\\n\"",
            "cloud-init refuses your user_data for cluster.pool.node[0]: ",
        ),
    ] {
        let text = format!("project: p\nclusters:\n  pool:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: A100-80GB:8\n    mig: 3g.40gb\n    {field}: {bad}\n");
        let out = support::gpuform_cmd(Path::new("."), &["validate", "/dev/stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(text.as_bytes())?;
                c.wait_with_output()
            })
            .unwrap();
        let err = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.status.success(), "{field}: {err}");
        assert!(err.contains(":9:") && err.contains(says), "{field}: {err}");
    }
    let text = "project: p\nclusters:\n  c:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: T4\n    kubernetes:\n      mode: kubeadm-join\n      token_env: T\n";
    let err = load_str("spec.yaml", text, &Vars::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spec.yaml:9:") && err.contains("needs `endpoint`"),
        "{err}"
    );
    // The DCGM exporter is deployed by a k3s server gpuform makes.
    let text = format!("{KUBEADM}      dcgm_exporter: true\n");
    let d = load_str("spec.yaml", &text, &Vars::default()).unwrap_err();
    let e = d
        .iter()
        .find(|x| x.message.contains("dcgm_exporter"))
        .expect("located");
    assert_eq!(
        e.yaml_path.as_deref(),
        Some("clusters.infer.kubernetes.dcgm_exporter")
    );
    assert_eq!(e.line, Some(15), "{e:?}");
    assert!(e.message.contains("needs `mode: k3s`"), "{e:?}");
    let text = format!("{KUBEADM}      addons: [kubeflow-training-operator]\n");
    let d = load_str("spec.yaml", &text, &Vars::default()).unwrap_err();
    let e = d
        .iter()
        .find(|x| x.message.contains("`addons`"))
        .expect("located");
    assert_eq!(
        e.yaml_path.as_deref(),
        Some("clusters.infer.kubernetes.addons")
    );
    let text = K3S.replace("taint:", "addons: [kubeflow]\n      taint:");
    let d = load_str("spec.yaml", &text, &Vars::default()).unwrap_err();
    let e = d
        .iter()
        .find(|x| x.message.contains("kubeflow"))
        .expect("located");
    assert_eq!(
        e.yaml_path.as_deref(),
        Some("clusters.train.kubernetes.addons[0]")
    );
    assert!(
        e.hint
            .as_deref()
            .unwrap_or("")
            .contains("kubeflow-training-operator"),
        "{e:?}"
    );
    let text = K3S.replace("taint:", "dcgm_exporter: yes\n      taint:");
    assert!(
        load_str("spec.yaml", &text, &Vars::default()).is_err(),
        "not a boolean"
    );
}

#[test]
fn plan_shows_the_bootstrap_and_bootstrap_show_prints_it() {
    let dir = tempfile::tempdir().unwrap();
    let spec = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mig-inference.yaml");
    let run = |args: &[&str]| support::gpuform_cmd(dir.path(), args).output().unwrap();
    let out = run(&["plan", spec.to_str().unwrap(), "--sandbox"]);
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{plan}");
    assert!(plan.contains("+ bootstrap        = <<EOT"), "{plan}");
    assert!(
        plan.contains("MIG: 2 × 3g.40gb on each of 8 GPU(s)"),
        "{plan}"
    );
    assert!(plan.contains("+ user_data_sha256 = \""), "{plan}");
    // What Kubernetes gets, and what a pod asks for.
    for want in [
        "k3s deploys: NVIDIA device plugin v0.17.1 DaemonSet (nvcr.io/nvidia/k8s-device-plugin:v0.17.1), MIG strategy single",
        "k3s deploys: NVIDIA DCGM exporter 4.2.3-4.1.3",
        "pods request nvidia.com/gpu: 1 = one 3g.40gb MIG instance; 16 per node",
    ] {
        assert!(plan.contains(want), "{want}\n{plan}");
    }
    let out = run(&[
        "bootstrap",
        "show",
        "cluster.pool.node[0]",
        spec.to_str().unwrap(),
    ]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.contains("# k3s deploys: NVIDIA device plugin v0.17.1 DaemonSet (nvcr.io/nvidia/k8s-device-plugin:v0.17.1), MIG strategy single")
            && shown.contains("# pods request nvidia.com/gpu: 1 = one 3g.40gb MIG instance; 16 per node")
            && shown.contains("{name: MIG_STRATEGY, value: single}"),
        "{shown}"
    );
    // One manifest alone, by its file name.
    let out = run(&[
        "bootstrap",
        "show",
        "cluster.pool.node[0]",
        spec.to_str().unwrap(),
        "--part",
        "gpuform-nvidia-device-plugin.yaml",
    ]);
    let part = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && part.starts_with("apiVersion: apps/v1\nkind: DaemonSet\n"),
        "{part}"
    );
    let docs = documents(&std::fs::read_to_string(&spec).unwrap());
    let out = run(&[
        "bootstrap",
        "show",
        "cluster.pool.node[1]",
        spec.to_str().unwrap(),
        "--sandbox",
    ]);
    assert!(out.status.success());
    let shown = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        &shown,
        &docs
            .iter()
            .find(|d| d.0 == "cluster.pool.node[1]")
            .unwrap()
            .1
    );
    // The hash in the plan is the hash of that document.
    use sha2::Digest;
    let sha = hex::encode(sha2::Sha256::digest(shown.as_bytes()));
    assert!(plan.contains(&sha), "{sha} not in plan");
    let out = run(&[
        "bootstrap",
        "show",
        "cluster.pool.node[1]",
        spec.to_str().unwrap(),
        "--part",
        "cloud-config",
    ]);
    let cc = dir.path().join("cc.yaml");
    std::fs::write(&cc, &out.stdout).unwrap();
    let check = Command::new(tool("cloud-init"))
        .args(["schema", "--config-file"])
        .arg(&cc)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let out = run(&[
        "bootstrap",
        "show",
        "cluster.pool.node[9]",
        spec.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a node"));
}

fn gpuform_in(dir: &Path, envs: &[(&str, &str)], args: &[&str]) -> (bool, String) {
    let out = support::gpuform_cmd(dir, args)
        .env_remove("GPUFORM_TEST_JOIN_TOKEN")
        .env_remove("K3S_TOKEN")
        .envs(envs.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// Every file under `dir` whose text contains `needle`, skipping `skip`.
fn files_containing(dir: &Path, needle: &str, skip: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.starts_with(skip) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if String::from_utf8_lossy(&std::fs::read(&p).unwrap()).contains(needle) {
                found.push(p);
            }
        }
    }
    found
}

#[test]
fn the_join_token_reaches_the_cloud_but_never_state_plans_or_output() {
    let canary = "canary7f3a.c0ffee1234567890";
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), KUBEADM).unwrap();
    // Every log line gpuform can write (GPUFORM_LOG=trace, to stderr) is
    // part of the output checked.
    let env = [
        ("GPUFORM_TEST_JOIN_TOKEN", canary),
        ("GPUFORM_LOG", "trace"),
    ];
    let mut output = String::new();
    let (ok, out) = gpuform_in(
        d,
        &env,
        &["plan", "spec.yaml", "--sandbox", "--out", "saved.plan"],
    );
    assert!(ok, "{out}");
    output.push_str(&out);
    let (ok, out) = gpuform_in(d, &env, &["apply", "saved.plan", "--auto-approve"]);
    assert!(ok, "{out}");
    output.push_str(&out);
    let (ok, out) = gpuform_in(
        d,
        &env,
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert!(ok, "a second plan must be clean:\n{out}");
    output.push_str(&out);
    let (_, out) = gpuform_in(d, &env, &["show", "-f", "spec.yaml", "--json"]);
    output.push_str(&out);
    assert!(
        !output.contains(canary),
        "the token is in the output:\n{output}"
    );
    let sandbox = d.join(".gpuform/sandbox");
    assert_eq!(files_containing(d, canary, &sandbox), Vec::<PathBuf>::new());
    // The cloud got it (filled at the create call): the sandbox's inventory
    // holds what each node was created with.
    assert!(!files_containing(&sandbox, canary, Path::new("/nonexistent")).is_empty());
    let state = std::fs::read_to_string(d.join(".gpuform/p.state.json")).unwrap();
    assert!(
        state.contains(USER_DATA_SHA256) && !state.contains("@@GPUFORM"),
        "{state}"
    );

    // Without the variable, the create stops before anything is made, naming it.
    let dir2 = tempfile::tempdir().unwrap();
    std::fs::write(dir2.path().join("spec.yaml"), KUBEADM).unwrap();
    let (ok, out) = gpuform_in(
        dir2.path(),
        &[],
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(!ok);
    assert!(
        out.contains("environment variable GPUFORM_TEST_JOIN_TOKEN"),
        "{out}"
    );
}

#[test]
fn a_changed_bootstrap_replaces_the_node_and_the_plan_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), KUBEADM).unwrap();
    let env = [("GPUFORM_TEST_JOIN_TOKEN", "abc.def")];
    let (ok, out) = gpuform_in(
        d,
        &env,
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(ok, "{out}");
    let changed = format!("{KUBEADM}      taint: nvidia.com/gpu=present:NoSchedule\n");
    std::fs::write(d.join("spec.yaml"), changed).unwrap();
    let (ok, plan) = gpuform_in(d, &env, &["plan", "spec.yaml", "--sandbox"]);
    assert!(ok, "{plan}");
    assert!(
        plan.contains("# cluster.infer.node[0] must be replaced (bootstrap, user_data_sha256 forces replacement)"),
        "{plan}"
    );
    assert!(plan.contains("          + node taint: nvidia.com/gpu=present:NoSchedule\n        EOT # forces replacement"), "{plan}");
    assert!(
        plan.contains("Plan: 0 to add, 0 to change, 2 to replace, 0 to destroy."),
        "{plan}"
    );
}

/// The instances of a sandbox inventory log in the order they were created:
/// (address, id, the user data the cloud received).
fn sandbox_creates(sandbox: &Path) -> Vec<(String, String, String)> {
    let log = std::fs::read_to_string(sandbox.join("inventory.jsonl")).unwrap();
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["op"] == "create" && v["kind"] == "instance")
        .map(|v| {
            (
                v["address"].as_str().unwrap_or_default().to_string(),
                v["id"].as_str().unwrap_or_default().to_string(),
                v["attrs"]["user_data"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect()
}

#[test]
fn a_k3s_cluster_joins_over_the_servers_private_address_on_the_sandbox() {
    // The graph orders the agents after the server (their `k3s_server`
    // dependency); just before each agent's create, apply reads the server's
    // `private_ip` from the cloud and fills it into the agent's user data.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), K3S).unwrap();
    let (ok, graph) = gpuform_in(d, &[], &["graph", "spec.yaml", "--sandbox"]);
    assert!(ok, "{graph}");
    assert!(
        graph.contains("node[0]") && graph.contains("node[2]"),
        "{graph}"
    );
    let token = "K10canary.k3s";
    let (ok, out) = gpuform_in(
        d,
        &[("K3S_TOKEN", token)],
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(ok, "{out}");
    assert!(!out.contains(token), "{out}");
    let creates = sandbox_creates(&d.join(".gpuform/sandbox"));
    let order: Vec<&str> = creates.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(order.len(), 3, "{order:?}");
    assert_eq!(
        order[0], "cluster.train.node[0]",
        "the server first: {order:?}"
    );
    // The server's address as the cloud reports it.
    let (ok, ls) = gpuform_in(d, &[], &["sandbox", "ls", "--json", "-f", "spec.yaml"]);
    assert!(ok, "{ls}");
    let ls: serde_json::Value = serde_json::from_str(&ls).unwrap();
    let server_ip = ls
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == creates[0].1.as_str())
        .and_then(|r| r["attrs"]["private_ip"].as_str())
        .expect("the server reports private_ip")
        .to_string();
    let docs = documents(K3S);
    for (address, _, sent) in &creates[1..] {
        assert!(
            sent.contains(&format!("K3S_URL=\"https://{server_ip}:6443\"")),
            "{address} does not join {server_ip}:\n{sent}"
        );
        assert!(sent.contains(token) && !sent.contains("@@GPUFORM"));
        // What the cloud got is the planned document, filled in.
        let planned = &docs.iter().find(|d| &d.0 == address).unwrap().1;
        assert_eq!(
            &fill(planned, token, &server_ip),
            sent,
            "{address}: the cloud got the planned document"
        );
    }
    // State keeps the hash of the planned (unfilled) documents, never the
    // address or the token.
    let state = std::fs::read_to_string(d.join(".gpuform/p.state.json")).unwrap();
    let st: serde_json::Value = serde_json::from_str(&state).unwrap();
    for (address, doc) in &docs {
        use sha2::Digest;
        let sha = hex::encode(sha2::Sha256::digest(doc.as_bytes()));
        assert_eq!(
            st["resources"][address]["attrs"][USER_DATA_SHA256].as_str(),
            Some(sha.as_str()),
            "{address}"
        );
    }
    support::assert_k3s_state_clean(&st, "cluster.train.node[0]", &server_ip, token);
    // A second plan is clean: the reported address is no drift.
    let (ok, out) = gpuform_in(
        d,
        &[("K3S_TOKEN", token)],
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert!(ok, "{out}");
}

#[test]
fn a_boot_document_over_the_clouds_limit_is_refused_at_user_data() {
    let big = format!("#!/bin/bash\n# {}\n", "x".repeat(13_000));
    let text = format!(
        "project: p\nclusters:\n  pool:\n    cloud: aws\n    region: us-east-1\n    nodes: 1\n    gpu: A100-80GB:8\n    mig: 3g.40gb\n    user_data: {:?}\n",
        big
    );
    let loaded = load_str("spec.yaml", &text, &Vars::default()).unwrap();
    let err = resolve(&loaded, Catalog::builtin(), &ResolveOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("spec.yaml:9:") && err.contains("clouds take at most 12288"),
        "{err}"
    );
}

/// A MIG pool as a gpuform from before node bootstraps made it: nodes with
/// `mig` and the user's `user_data` recorded as plain attributes.
const PRE_BOOTSTRAP_POOL: &str = "project: p\nclusters:\n  pool:\n    cloud: aws\n    region: us-east-1\n    nodes: 2\n    gpu: A100-80GB:8\n    mig: 3g.40gb\n    user_data: |\n      #!/bin/bash\n      echo hello from the user\n";

/// Rewrites the state of an applied pool the way the gpuform before node
/// bootstraps wrote it for [`PRE_BOOTSTRAP_POOL`] (state format 1):
/// instances carry `mig` and the user's `user_data` (sent as it was) as
/// plain attributes, and no `user_data_sha256`, `bootstrap` or
/// `own_user_data`.
fn as_written_before_bootstraps(state: &Path) {
    let mut st: serde_json::Value = serde_json::from_slice(&std::fs::read(state).unwrap()).unwrap();
    st["format_version"] = 1.into();
    for (_, r) in st["resources"].as_object_mut().unwrap() {
        if r["kind"] != "instance" {
            continue;
        }
        let a = r["attrs"].as_object_mut().unwrap();
        a.insert("mig".into(), "3g.40gb".into());
        // The keys the older version recorded, and no others.
        let keys: Vec<&str> = a.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "gpu",
                "image",
                "instance_type",
                "mig",
                "pricing",
                "rdma",
                "root_gb",
                "user_data",
                "zone"
            ]
        );
        assert_eq!(a["user_data"], "#!/bin/bash\necho hello from the user\n");
    }
    std::fs::write(state, serde_json::to_vec_pretty(&st).unwrap()).unwrap();
}

#[test]
fn upgrading_does_not_replace_nodes_made_before_bootstraps() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // The nodes as the older version made them: the user's user_data sent
    // as written (here: made from the spec without `mig`, which is what
    // renders a bootstrap now), then its state as that version wrote it.
    let without_mig = PRE_BOOTSTRAP_POOL.replace("    mig: 3g.40gb\n", "");
    std::fs::write(d.join("spec.yaml"), without_mig).unwrap();
    let (ok, out) = gpuform_in(
        d,
        &[],
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(ok, "{out}");
    let state = d.join(".gpuform/p.state.json");
    as_written_before_bootstraps(&state);
    std::fs::write(d.join("spec.yaml"), PRE_BOOTSTRAP_POOL).unwrap();

    // The running nodes stay; the plan says why they have no bootstrap.
    let (ok, plan) = gpuform_in(
        d,
        &[],
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert!(ok, "no change is planned:\n{plan}");
    assert!(
        plan.contains("bootstrap: not applied to 2 running node(s) made before gpuform rendered node bootstraps (cluster.pool.node[0], cluster.pool.node[1])")
            && plan.contains("--replace ADDRESS"),
        "{plan}"
    );
    // Reading migrated the state (format 2, the nodes marked) — on disk
    // once something writes it: an apply of nothing keeps the nodes.
    let (ok, out) = gpuform_in(
        d,
        &[],
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(ok, "{out}");
    let (ok, plan) = gpuform_in(
        d,
        &[],
        &["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"],
    );
    assert!(ok, "still nothing to do:\n{plan}");

    // --replace gives one node its bootstrap; the other stays.
    let (ok, plan) = gpuform_in(
        d,
        &[],
        &[
            "plan",
            "spec.yaml",
            "--sandbox",
            "--replace",
            "cluster.pool.node[1]",
        ],
    );
    assert!(ok, "{plan}");
    assert!(
        plan.contains("# cluster.pool.node[1] must be replaced (asked for with --replace)")
            && plan.contains(
                "~ bootstrap        = <<EOT\n          + MIG: 2 × 3g.40gb on each of 8 GPU(s)"
            )
            && plan.contains("Plan: 0 to add, 0 to change, 1 to replace, 0 to destroy."),
        "{plan}"
    );
    assert!(plan.contains("(cluster.pool.node[0])"), "{plan}");
    let (ok, out) = gpuform_in(
        d,
        &[],
        &[
            "plan",
            "spec.yaml",
            "--sandbox",
            "--replace",
            "cluster.pool.node[7]",
        ],
    );
    assert!(
        !ok && out.contains("--replace cluster.pool.node[7]: no such resource"),
        "{out}"
    );

    // The user's own user_data changed: a replacement, as it always was,
    // now with the bootstrap.
    let changed = PRE_BOOTSTRAP_POOL.replace("hello from the user", "hello again");
    std::fs::write(d.join("spec.yaml"), changed).unwrap();
    let (ok, plan) = gpuform_in(d, &[], &["plan", "spec.yaml", "--sandbox"]);
    assert!(ok, "{plan}");
    assert!(
        plan.contains("Plan: 0 to add, 0 to change, 2 to replace, 0 to destroy."),
        "{plan}"
    );
    assert!(plan.contains("own_user_data"), "{plan}");
    assert!(!plan.contains("bootstrap: not applied"), "{plan}");

    // Another forcing change (the instance type, by the GPU) replaces the
    // node as before, and the new node gets its bootstrap.
    let bigger = PRE_BOOTSTRAP_POOL.replace("A100-80GB:8", "H100:8");
    std::fs::write(d.join("spec.yaml"), bigger).unwrap();
    let (ok, plan) = gpuform_in(d, &[], &["plan", "spec.yaml", "--sandbox"]);
    assert!(ok, "{plan}");
    assert!(
        plan.contains("Plan: 0 to add, 0 to change, 2 to replace, 0 to destroy.")
            && plan.contains("+ MIG: 2 × 3g.40gb")
            && plan.contains("(gpu, instance_type forces replacement)")
            && plan.contains("~ user_data_sha256 = (none) -> \""),
        "{plan}"
    );
}

/// kubernetes-validate (PyPI), from the venv `scripts/kubernetes-validate.sh`
/// makes (its path in GPUFORM_TEST_KUBERNETES_VALIDATE, set by
/// scripts/test.sh), else on PATH. Missing under CI: a failure.
fn kubernetes_validate() -> Option<PathBuf> {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-k8s/bin/kubernetes-validate");
    let found = std::env::var_os("GPUFORM_TEST_KUBERNETES_VALIDATE")
        .map(PathBuf::from)
        .filter(|p| p.exists())
        .or_else(|| venv.exists().then_some(venv));
    if found.is_some() {
        return found;
    }
    support::tool_present(
        "kubernetes-validate",
        "the Kubernetes schema check of the manifests; scripts/kubernetes-validate.sh installs it",
    )
    .then(|| PathBuf::from("kubernetes-validate"))
}

/// The Kubernetes versions whose schema a document's manifests must pass:
/// the minor of the k3s it pins, else (the channel's stable release) the
/// oldest and newest minors kubernetes-validate knows that k3s ships.
fn schema_versions(doc: &str) -> Vec<String> {
    let pinned = doc
        .split("INSTALL_K3S_VERSION=\"v")
        .nth(1)
        .and_then(|r| r.split('+').next())
        .and_then(|v| {
            let mut it = v.split('.');
            Some(format!("{}.{}.0", it.next()?, it.next()?))
        });
    match pinned {
        Some(v) => vec![v],
        None => vec!["1.30.0".into(), "1.37.0".into()],
    }
}

/// The manifests a document writes to k3s's auto-deploy directory.
fn manifests_of(doc: &str) -> Vec<(String, String)> {
    let parts = split_multipart(doc);
    write_files(&parts[0].1)
        .into_iter()
        .filter(|(p, _, _)| p.starts_with(bootstrap::manifests::K3S_MANIFESTS_DIR))
        .map(|(p, c, _)| (p, c))
        .collect()
}

fn validate_manifest(tool: &Path, version: &str, text: &str) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("manifest.yaml");
    std::fs::write(&file, text).unwrap();
    let out = Command::new(tool)
        .args(["--strict", "--quiet", "-k", version])
        .arg(&file)
        .output()
        .expect("kubernetes-validate runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() && !said.contains("INVALID") {
        Ok(())
    } else {
        Err(said)
    }
}

#[test]
fn every_manifest_validates_against_the_kubernetes_schema_of_its_k3s() {
    let Some(tool) = kubernetes_validate() else {
        return;
    };
    let mut checked = Vec::new();
    // Every document, and a k3s of the stable channel (no version).
    let mut docs = all_documents();
    docs.extend(documents(
        &K3S_MIXED.replace("      version: v1.28.15+k3s1\n", ""),
    ));
    for (address, doc) in docs {
        for (path, text) in manifests_of(&doc) {
            for v in schema_versions(&doc) {
                if let Err(why) = validate_manifest(&tool, &v, &text) {
                    panic!("{address} {path}: not valid for Kubernetes {v}:\n{why}\n{text}");
                }
                checked.push(format!("{path}@{v}"));
            }
        }
    }
    // The server of each k3s spec: the RuntimeClass, the device plugin and,
    // where asked, the DCGM exporter.
    for want in [
        "gpuform-nvidia-runtimeclass.yaml@1.28.0",
        "gpuform-nvidia-device-plugin.yaml@1.28.0",
        "gpuform-nvidia-device-plugin.yaml@1.30.0",
        "gpuform-dcgm-exporter.yaml@1.28.0",
        "gpuform-dcgm-exporter.yaml@1.30.0",
        "gpuform-dcgm-exporter.yaml@1.37.0",
    ] {
        assert!(
            checked.iter().any(|c| c.ends_with(want)),
            "{want} not checked: {checked:?}"
        );
    }
    // The README's pod on a MIG slice is a valid Pod too.
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let pod = readme
        .split("```yaml\n")
        .filter_map(|b| b.split("```").next())
        .find(|b| b.contains("kind: Pod\n"))
        .expect("the README shows a pod spec");
    assert!(pod.contains("nvidia.com/gpu: 1") && pod.contains("runtimeClassName: nvidia"));
    validate_manifest(&tool, "1.30.0", pod).unwrap();
    // The check can fail: a misspelt field is refused.
    let (_, doc) = documents(K3S).remove(0);
    let (_, text) = manifests_of(&doc)
        .into_iter()
        .find(|(p, _)| p.ends_with("device-plugin.yaml"))
        .unwrap();
    let broken = text.replace("nodeSelector:", "nodeSelecter:");
    assert_ne!(broken, text);
    assert!(validate_manifest(&tool, "1.30.0", &broken).is_err());
}

#[test]
fn the_mig_strategy_and_resource_follow_the_layout() {
    // One profile on every GPU: `single`, and a MIG slice is a nvidia.com/gpu.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mig-inference.yaml"),
    )
    .unwrap();
    let docs = documents(&text);
    let (_, server) = docs
        .iter()
        .find(|(a, _)| a == "cluster.pool.node[0]")
        .unwrap();
    let m = manifests_of(server);
    let dp = &m
        .iter()
        .find(|(p, _)| p.ends_with("device-plugin.yaml"))
        .unwrap()
        .1;
    assert!(dp.contains("{name: MIG_STRATEGY, value: single}"), "{dp}");
    assert!(m.iter().any(|(p, _)| p.ends_with("dcgm-exporter.yaml")));
    // A mixed layout: `mixed`, one resource per profile, the spec's taint tolerated.
    let docs = documents(K3S_MIXED);
    let m = manifests_of(&docs[0].1);
    let dp = &m
        .iter()
        .find(|(p, _)| p.ends_with("device-plugin.yaml"))
        .unwrap()
        .1;
    assert!(
        dp.contains("{name: MIG_STRATEGY, value: mixed}") && dp.contains("key: dedicated,"),
        "{dp}"
    );
    assert!(
        docs[1].1.contains("nvidia.com/mig-1g.10gb.count=2"),
        "agents are labelled too"
    );
    assert!(
        manifests_of(&docs[1].1).is_empty(),
        "only the server deploys"
    );
}

/// A distinctive piece of a PEM: 40 characters from the middle of its first
/// body line, found both in the PEM and in the one-line base64 of its DER.
fn canary_of(pem: &str) -> String {
    let line = pem.lines().nth(1).expect("a PEM body");
    line[12..52].to_string()
}

#[test]
fn k3s_credentials_reach_the_server_and_the_kubeconfig_but_never_state_plans_or_logs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), K3S).unwrap();
    let env = [("K3S_TOKEN", "K10canary.k3s"), ("GPUFORM_LOG", "trace")];
    let mut output = String::new();
    let mut run = |args: &[&str]| {
        let (ok, out) = gpuform_in(d, &env, args);
        assert!(ok, "{args:?}: {out}");
        output.push_str(&out);
    };
    run(&["plan", "spec.yaml", "--sandbox", "--out", "saved.plan"]);
    run(&["apply", "saved.plan", "--auto-approve"]);
    run(&["plan", "spec.yaml", "--sandbox", "--detailed-exitcode"]);
    run(&["output", "-f", "spec.yaml", "--json"]);
    run(&[
        "kubeconfig",
        "spec.yaml",
        "train",
        "--out",
        "admin.kubeconfig",
    ]);
    let secrets = d.join(".gpuform/p.secrets");
    let cas: serde_json::Value =
        serde_json::from_slice(&std::fs::read(secrets.join("train.k3s.json")).unwrap()).unwrap();
    let pem = |k: &str| cas[k].as_str().unwrap().to_string();
    let kubeconfig = std::fs::read_to_string(d.join("admin.kubeconfig")).unwrap();
    let kc: serde_yaml::Value = serde_yaml::from_str(&kubeconfig).unwrap();
    let b64 = |v: &serde_yaml::Value| {
        use base64::Engine as _;
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    let user = &kc["users"][0]["user"];
    let admin_key = b64(&user["client-key-data"]);
    assert!(admin_key.contains("PRIVATE KEY"));
    // The kubeconfig pins the cluster's server CA and names the server by
    // the address the cloud reported.
    assert_eq!(
        b64(&kc["clusters"][0]["cluster"]["certificate-authority-data"]),
        pem("server_ca_crt")
    );
    let server = kc["clusters"][0]["cluster"]["server"].as_str().unwrap();
    assert!(
        server.starts_with("https://10.") && server.ends_with(":6443"),
        "{server}"
    );
    assert_eq!(kc["current-context"].as_str(), Some("p-train"));

    let sandbox = d.join(".gpuform/sandbox");
    let sent: String = sandbox_creates(&sandbox)
        .into_iter()
        .filter(|c| c.0 == "cluster.train.node[0]")
        .map(|c| c.2)
        .collect();
    let skip_secrets = |found: Vec<PathBuf>| -> Vec<PathBuf> {
        found
            .into_iter()
            .filter(|p| !p.starts_with(&secrets) && !p.starts_with(&sandbox))
            .collect()
    };
    // What the server needs reaches it (the cloud), and nothing else does:
    // the admin CA's key and the admin's key never leave this machine.
    for (what, text, on_server) in [
        ("server CA key", pem("server_ca_key"), true),
        ("server CA certificate", pem("server_ca_crt"), true),
        ("admin CA certificate", pem("admin_ca_crt"), true),
        ("admin CA key", pem("admin_ca_key"), false),
        ("admin client key", admin_key.clone(), false),
    ] {
        let canary = canary_of(&text);
        assert_eq!(
            sent.contains(&canary),
            on_server,
            "{what} in the server's user data"
        );
        assert!(!output.contains(&canary), "{what} in the output:\n{output}");
        let found = skip_secrets(files_containing(d, &canary, Path::new("/nonexistent")));
        let found: Vec<PathBuf> = found
            .into_iter()
            .filter(|p| !p.ends_with("admin.kubeconfig"))
            .collect();
        assert_eq!(
            found,
            Vec::<PathBuf>::new(),
            "{what}: in state, journal or plan"
        );
        if !on_server {
            assert!(
                files_containing(&sandbox, &canary, Path::new("/nonexistent")).is_empty(),
                "{what} reached the cloud"
            );
        }
    }
    // Owner-only files.
    use std::os::unix::fs::PermissionsExt;
    for p in [secrets.join("train.k3s.json"), d.join("admin.kubeconfig")] {
        let mode = std::fs::metadata(&p).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{}", p.display());
    }
    // A second kubeconfig is a new admin certificate from the same CAs.
    let (ok, out) = gpuform_in(d, &env, &["kubeconfig", "spec.yaml", "train", "-o", "-"]);
    assert!(ok, "{out}");
    let again: serde_yaml::Value = serde_yaml::from_str(&out).unwrap();
    assert_ne!(
        again["users"][0]["user"]["client-key-data"],
        user["client-key-data"]
    );
    assert_eq!(
        again["clusters"][0]["cluster"]["certificate-authority-data"],
        kc["clusters"][0]["cluster"]["certificate-authority-data"]
    );
}

#[test]
fn with_a_state_passphrase_the_credentials_are_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), K3S).unwrap();
    let env = [
        ("K3S_TOKEN", "K10canary.k3s"),
        ("GPUFORM_STATE_PASSPHRASE", "correct horse battery staple"),
    ];
    let (ok, out) = gpuform_in(
        d,
        &env,
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(ok, "{out}");
    let file = std::fs::read_to_string(d.join(".gpuform/p.secrets/train.k3s.json")).unwrap();
    assert!(
        file.contains("gpuform_encrypted") && !file.contains("PRIVATE KEY"),
        "{file}"
    );
    let (ok, out) = gpuform_in(d, &env, &["kubeconfig", "spec.yaml", "train", "-o", "-"]);
    assert!(ok && out.contains("client-key-data"), "{out}");
    // Without the passphrase, the command says what to set.
    let (ok, out) = gpuform_in(d, &[], &["kubeconfig", "spec.yaml", "train", "-o", "-"]);
    assert!(!ok && out.contains("GPUFORM_STATE_PASSPHRASE"), "{out}");
}

#[test]
fn the_kubeflow_training_operator_is_applied_from_its_pinned_overlay_once_the_api_answers() {
    let docs = documents(K3S_MIXED);
    let (address, doc) = &docs[0];
    assert_eq!(address, "cluster.infer.node[0]");
    let root = Root::new(&fill(doc, "K10token.canary", "10.0.0.5"), 0);
    let calls = root.run();
    let at = calls
        .iter()
        .position(|c| c == "systemctl restart k3s")
        .expect("k3s restarted");
    let tail: Vec<&str> = calls[at..at + 3].iter().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "systemctl restart k3s",
            "k3s kubectl get --raw /readyz",
            "k3s kubectl apply --server-side -k github.com/kubeflow/training-operator.git/manifests/overlays/standalone?ref=v1.8.1",
        ],
        "{calls:?}"
    );
    // A second run: only the (idempotent) enabling of the MIG unit.
    assert_eq!(root.run(), lines(&["systemctl enable gpuform-mig.service"]));
    // Agents do not apply it.
    assert!(!docs[1].1.contains("training-operator"));
    // The plan says so.
    let plan_steps = doc.contains("# k3s applies once up: Kubeflow Training Operator v1.8.1");
    assert!(plan_steps, "{doc}");
}

#[test]
fn kubeconfig_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("spec.yaml"), K3S).unwrap();
    std::fs::write(d.join("kubeadm.yaml"), KUBEADM).unwrap();
    let env = [("K3S_TOKEN", "K10canary.k3s")];
    // Before apply: no server in state.
    let (ok, out) = gpuform_in(d, &env, &["kubeconfig", "spec.yaml", "train"]);
    assert!(
        !ok && out.contains("cluster.train.node[0] (the k3s server) is not in state"),
        "{out}"
    );
    assert!(out.contains("hint: `gpuform apply spec.yaml`"), "{out}");
    // Not a cluster, or not one gpuform's k3s makes.
    let (ok, out) = gpuform_in(d, &env, &["kubeconfig", "spec.yaml", "nope"]);
    assert!(
        !ok && out.contains("has no cluster `nope`") && out.contains("clusters: train"),
        "{out}"
    );
    let (ok, out) = gpuform_in(d, &env, &["kubeconfig", "kubeadm.yaml", "infer"]);
    assert!(
        !ok && out.contains("is not a k3s cluster gpuform makes"),
        "{out}"
    );
    // Applied elsewhere (no credentials here): says where it looked.
    let (ok, out) = gpuform_in(
        d,
        &env,
        &["apply", "spec.yaml", "--sandbox", "--auto-approve"],
    );
    assert!(ok, "{out}");
    std::fs::remove_dir_all(d.join(".gpuform/p.secrets")).unwrap();
    let (ok, out) = gpuform_in(d, &env, &["kubeconfig", "spec.yaml", "train"]);
    assert!(
        !ok && out.contains("no credentials for cluster `train`") && out.contains("p.secrets"),
        "{out}"
    );
    // Only private addresses are reported so far.
    let (ok, out) = gpuform_in(
        d,
        &env,
        &["kubeconfig", "spec.yaml", "train", "--address", "public"],
    );
    assert!(!ok && out.contains("no public address"), "{out}");
}

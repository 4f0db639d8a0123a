//! The boot scripts, one per step. Each is a bash script that:
//! - reads nothing but its own constants, the OS (`/etc/os-release`) and the
//!   machine (`nvidia-smi`, `/sys/block`), under `$GPUFORM_ROOT` (empty on a
//!   node; a throwaway directory in the tests, which put recording stand-ins
//!   for every command first on `PATH`);
//! - is idempotent: a second run changes nothing (a `done` marker for the
//!   one-time steps; MIG compares the GPUs' instances with the layout).
//!
//! Values interpolated here were validated by the spec layer (versions,
//! paths, profile names, label values: no quotes, spaces or `$`).

/// Where the scripts, markers and the MIG unit live on the node.
pub const LIB_DIR: &str = "/usr/local/lib/gpuform";
pub const STATE_DIR: &str = "/var/lib/gpuform";

const PRELUDE: &str = r#"set -euo pipefail
root="${GPUFORM_ROOT:-}"
state="$root/var/lib/gpuform"
mkdir -p "$state"
log() { printf 'gpuform: %s\n' "$*" >&2; }
"#;

fn header(what: &str) -> String {
    format!("#!/bin/bash\n# gpuform bootstrap: {what}\n{PRELUDE}")
}

/// NVIDIA driver + NVIDIA Container Toolkit from NVIDIA's repositories,
/// for the OS found at boot (Ubuntu, Amazon Linux 2023, RHEL family
/// including Alibaba Cloud Linux 3 and Rocky/CentOS).
pub fn nvidia_driver(branch: &str) -> String {
    let mut s = header(&format!(
        "NVIDIA driver {branch} and the NVIDIA Container Toolkit"
    ));
    s.push_str(&format!(
        r#"branch="{branch}"
marker="$state/driver-nvidia-$branch.done"
if [ -e "$marker" ]; then
  log "driver $branch already installed"
  exit 0
fi
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  log "a driver is present already; installing the container toolkit only"
  have_driver=1
else
  have_driver=0
fi
# shellcheck source=/dev/null
. "$root/etc/os-release"
arch="$(uname -m)"
case "$ID" in
  ubuntu)
    repo="ubuntu${{VERSION_ID//./}}"
    export DEBIAN_FRONTEND=noninteractive
    if [ "$have_driver" = 0 ]; then
      curl -fsSL -o "$state/cuda-keyring.deb" \
        "https://developer.download.nvidia.com/compute/cuda/repos/$repo/$arch/cuda-keyring_1.1-1_all.deb"
      dpkg -i "$state/cuda-keyring.deb"
      apt-get update -q
      apt-get install -y -q "cuda-drivers-$branch"
    fi
    curl -fsSL -o "$state/nvidia-container-toolkit.gpgkey" https://nvidia.github.io/libnvidia-container/gpgkey
    gpg --batch --yes --dearmor -o "$root/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg" \
      "$state/nvidia-container-toolkit.gpgkey"
    curl -fsSL https://nvidia.github.io/libnvidia-container/stable/deb/nvidia-container-toolkit.list \
      | sed 's#deb https://#deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] https://#g' \
      > "$root/etc/apt/sources.list.d/nvidia-container-toolkit.list"
    apt-get update -q
    apt-get install -y -q nvidia-container-toolkit
    ;;
  amzn|rhel|rocky|almalinux|centos|alinux)
    case "$ID" in
      amzn) repo="amzn${{VERSION_ID%%.*}}" ;;
      alinux) repo="rhel8" ;;
      *) repo="rhel${{VERSION_ID%%.*}}" ;;
    esac
    if [ "$have_driver" = 0 ]; then
      dnf config-manager --add-repo \
        "https://developer.download.nvidia.com/compute/cuda/repos/$repo/$arch/cuda-$repo.repo"
      dnf -y module install "nvidia-driver:$branch-dkms"
    fi
    curl -fsSL -o "$root/etc/yum.repos.d/nvidia-container-toolkit.repo" \
      https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo
    dnf -y install nvidia-container-toolkit
    ;;
  *)
    log "no NVIDIA repository known for $ID $VERSION_ID; install the driver in the image"
    exit 1
    ;;
esac
nvidia-smi -pm 1
: > "$marker"
log "driver $branch and container toolkit installed"
"#
    ));
    s
}

/// AMD ROCm from repo.radeon.com (Ubuntu, RHEL family).
pub fn rocm(release: &str) -> String {
    let mut s = header(&format!("AMD ROCm {release}"));
    s.push_str(&format!(
        r#"release="{release}"
marker="$state/driver-rocm-$release.done"
if [ -e "$marker" ]; then
  log "ROCm $release already installed"
  exit 0
fi
# shellcheck source=/dev/null
. "$root/etc/os-release"
case "$ID" in
  ubuntu)
    export DEBIAN_FRONTEND=noninteractive
    mkdir -p "$root/etc/apt/keyrings"
    curl -fsSL -o "$state/rocm.gpg.key" https://repo.radeon.com/rocm/rocm.gpg.key
    gpg --batch --yes --dearmor -o "$root/etc/apt/keyrings/rocm.gpg" "$state/rocm.gpg.key"
    {{
      echo "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/amdgpu/$release/ubuntu $VERSION_CODENAME main"
      echo "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/rocm/apt/$release $VERSION_CODENAME main"
    }} > "$root/etc/apt/sources.list.d/rocm.list"
    apt-get update -q
    apt-get install -y -q amdgpu-dkms rocm
    ;;
  rhel|rocky|almalinux|centos)
    major="${{VERSION_ID%%.*}}"
    {{
      echo "[amdgpu]"
      echo "name=amdgpu"
      echo "baseurl=https://repo.radeon.com/amdgpu/$release/rhel/$VERSION_ID/main/x86_64/"
      echo "gpgkey=https://repo.radeon.com/rocm/rocm.gpg.key"
      echo "gpgcheck=1"
      echo "[rocm]"
      echo "name=rocm"
      echo "baseurl=https://repo.radeon.com/rocm/el$major/$release/main"
      echo "gpgkey=https://repo.radeon.com/rocm/rocm.gpg.key"
      echo "gpgcheck=1"
    }} > "$root/etc/yum.repos.d/rocm.repo"
    dnf -y install amdgpu-dkms rocm
    ;;
  *)
    log "no ROCm repository known for $ID $VERSION_ID; install ROCm in the image"
    exit 1
    ;;
esac
: > "$marker"
log "ROCm $release installed"
"#
    ));
    s
}

/// MIG: mode on, then exactly `layout` (GPU instances, each with its
/// default compute instance) on every GPU. Run by a systemd unit at every
/// boot before containerd/kubelet/k3s: GPU instances do not survive a reboot.
pub fn mig(layout: &[String], gpus: u32) -> String {
    let mut s = header(&format!("MIG layout {} on {gpus} GPU(s)", layout.join(",")));
    let mut sorted = layout.to_vec();
    sorted.sort();
    s.push_str(&format!(
        r#"layout="{layout}"
want="{want}"
gpus={gpus}
# Profiles of the GPU instances on GPU $1, sorted, comma-separated.
current() {{
  nvidia-smi mig -i "$1" -lgi 2>/dev/null \
    | sed -n 's/.*MIG \([0-9][0-9]*g\.[0-9][0-9]*gb[+me]*\).*/\1/p' \
    | sort | paste -sd, - || true
}}
for ((i = 0; i < gpus; i++)); do
  mode="$(nvidia-smi -i "$i" --query-gpu=mig.mode.current --format=csv,noheader)"
  if [ "$mode" != "Enabled" ]; then
    nvidia-smi -i "$i" -mig 1
    mode="$(nvidia-smi -i "$i" --query-gpu=mig.mode.current --format=csv,noheader)"
    if [ "$mode" != "Enabled" ]; then
      nvidia-smi -i "$i" -r
    fi
  fi
  have="$(current "$i")"
  if [ "$have" = "$want" ]; then
    log "GPU $i: MIG layout already $layout"
    continue
  fi
  if [ -n "$have" ]; then
    log "GPU $i: replacing MIG layout $have"
    nvidia-smi mig -i "$i" -dci
    nvidia-smi mig -i "$i" -dgi
  fi
  nvidia-smi mig -i "$i" -cgi "$layout" -C
done
log "MIG layout $layout on $gpus GPU(s)"
"#,
        layout = layout.join(","),
        want = sorted.join(","),
    ));
    s
}

/// The systemd unit that applies MIG at every boot, before the container
/// runtime and the kubelet start.
pub fn mig_unit() -> String {
    format!(
        "[Unit]\n\
         Description=gpuform: apply the MIG layout\n\
         After=nvidia-persistenced.service\n\
         Before=containerd.service kubelet.service k3s.service k3s-agent.service\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         RemainAfterExit=yes\n\
         ExecStart={LIB_DIR}/mig.sh\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n"
    )
}

/// Local NVMe: the instance-store disks (not EBS-like network disks, not
/// partitioned or in use), RAID 0 when more than one, ext4, in fstab with
/// `nofail` (instance store comes back empty after a stop), mounted.
pub fn nvme(expected: u32, mount: &str) -> String {
    let mut s = header(&format!("{expected} local NVMe disk(s) at {mount}"));
    s.push_str(&format!(
        r#"expected={expected}
mount_at="{mount}"
label="gpuform-data"
if grep -q "^LABEL=$label $mount_at " "$root/etc/fstab" 2>/dev/null && mountpoint -q "$root$mount_at"; then
  log "$mount_at already mounted"
  exit 0
fi
# Local disks: NVMe namespaces that are not network block storage, have no
# partitions and no filesystem. Wait for all of them (they can appear late).
find_disks() {{
  disks=()
  for dev in "$root"/sys/block/nvme*n1; do
    [ -e "$dev" ] || continue
    name="${{dev##*/}}"
    model="$(cat "$dev/device/model" 2>/dev/null || true)"
    case "$model" in
      *"Elastic Block Store"*|*"EBS"*) continue ;;
    esac
    if compgen -G "$dev/${{name}}p*" >/dev/null; then
      continue
    fi
    if [ -n "$(blkid -o value -s TYPE "/dev/$name" || true)" ]; then
      continue
    fi
    disks+=("/dev/$name")
  done
}}
for _ in $(seq 1 60); do
  find_disks
  [ "${{#disks[@]}}" -ge "$expected" ] && break
  sleep 1
done
if [ "${{#disks[@]}}" -eq 0 ]; then
  if [ -n "$(blkid -L "$label" || true)" ]; then
    log "found the filesystem $label from an earlier boot"
  else
    log "no local NVMe disk found; $mount_at not set up"
    exit 1
  fi
elif [ "${{#disks[@]}}" -eq 1 ]; then
  mkfs -t ext4 -F -L "$label" "${{disks[0]}}"
else
  mdadm --create /dev/md/gpuform-data --run --level=0 --raid-devices="${{#disks[@]}}" "${{disks[@]}}"
  mkfs -t ext4 -F -L "$label" /dev/md/gpuform-data
fi
mkdir -p "$root$mount_at"
if ! grep -q "^LABEL=$label " "$root/etc/fstab" 2>/dev/null; then
  echo "LABEL=$label $mount_at ext4 defaults,nofail,x-systemd.device-timeout=30s 0 2" >> "$root/etc/fstab"
fi
mount "$mount_at"
log "${{#disks[@]}} disk(s) mounted at $mount_at"
"#
    ));
    s
}

/// What joining Kubernetes needs; the token and the server's address are
/// placeholders the apply fills in (see `super::placeholder`).
pub struct KubeJoin<'a> {
    pub role: KubeRole<'a>,
    /// k3s server: the placeholders of what it is given from the user's
    /// side (see [`ServerSecrets`]).
    pub server_secrets: Option<ServerSecrets>,
    /// `key=value` node labels.
    pub labels: &'a [String],
    pub taint: Option<&'a str>,
    /// k3s server: a kustomize overlay to apply once the API answers.
    pub kubeflow_overlay: Option<String>,
    pub token: &'a str,
}

pub enum KubeRole<'a> {
    K3sServer {
        version: Option<&'a str>,
    },
    K3sAgent {
        version: Option<&'a str>,
        server: &'a str,
    },
    Kubeadm {
        endpoint: &'a str,
        ca_cert_hash: &'a str,
    },
}

pub fn kubernetes(k: &KubeJoin<'_>) -> String {
    let what = match &k.role {
        KubeRole::K3sServer { .. } => "k3s server".to_string(),
        KubeRole::K3sAgent { .. } => "k3s agent".to_string(),
        KubeRole::Kubeadm { endpoint, .. } => format!("kubeadm join {endpoint}"),
    };
    let mut s = header(&what);
    s.push_str(&format!(
        "marker=\"$state/kubernetes.done\"\n\
         if [ -e \"$marker\" ]; then\n  log \"already joined\"\n  exit 0\nfi\n\
         token='{}'\n",
        k.token
    ));
    let mut args: Vec<String> = k
        .labels
        .iter()
        .map(|l| format!("--node-label {l}"))
        .collect();
    if let Some(t) = k.taint {
        args.push(format!("--node-taint {t}"));
    }
    match &k.role {
        KubeRole::K3sServer { version } | KubeRole::K3sAgent { version, .. } => {
            let (exec, url, token_var) = match &k.role {
                KubeRole::K3sAgent { server, .. } => (
                    "agent",
                    format!("export K3S_URL=\"https://{server}:6443\"\n"),
                    "K3S_TOKEN",
                ),
                // The server is given the agent token only: k3s makes its
                // own server token, which never leaves the node (it
                // encrypts the CA keys in the datastore).
                _ => ("server", String::new(), "K3S_AGENT_TOKEN"),
            };
            if let Some(sec) = &k.server_secrets {
                s.push_str(&server_ca(sec));
            }
            s.push_str(&format!(
                "installer=\"$state/k3s-install.sh\"\n\
                 curl -fsSL -o \"$installer\" https://get.k3s.io\n\
                 export {token_var}=\"$token\"\n{url}{version}\
                 INSTALL_K3S_EXEC=\"{exec}\" sh \"$installer\" {args}\n",
                version = version
                    .map(|v| format!("export INSTALL_K3S_VERSION=\"{v}\"\n"))
                    .unwrap_or_default(),
                args = args.join(" "),
            ));
            if k.server_secrets.is_some() {
                s.push_str(ADMIN_CA_BUNDLE);
            }
            if let Some(overlay) = &k.kubeflow_overlay {
                s.push_str(&format!(
                    r#"for _ in $(seq 1 300); do
  k3s kubectl get --raw /readyz >/dev/null 2>&1 && break
  sleep 2
done
if ! command -v git >/dev/null 2>&1; then
  apt-get install -y -q git || dnf -y install git
fi
for attempt in 1 2 3; do
  k3s kubectl apply --server-side -k "{overlay}" && break
  [ "$attempt" = 3 ] && exit 1
  sleep 10
done
"#
                ));
            }
        }
        KubeRole::Kubeadm {
            endpoint,
            ca_cert_hash,
        } => {
            let labels = k.labels.join(",");
            let taint = k
                .taint
                .map(|t| format!(" --register-with-taints={t}"))
                .unwrap_or_default();
            s.push_str(&format!(
                "if ! command -v kubeadm >/dev/null 2>&1; then\n  \
                   log \"kubeadm is not on the image; use an image with kubeadm, kubelet and containerd\"\n  \
                   exit 1\nfi\n\
                 if command -v nvidia-ctk >/dev/null 2>&1; then\n  \
                   nvidia-ctk runtime configure --runtime=containerd --set-as-default\n  \
                   systemctl restart containerd\nfi\n\
                 echo \"KUBELET_EXTRA_ARGS=--node-labels={labels}{taint}\" > \"$root/etc/default/kubelet\"\n\
                 kubeadm join {endpoint} --token \"$token\" --discovery-token-ca-cert-hash {ca_cert_hash}\n"
            ));
        }
    }
    s.push_str(": > \"$marker\"\nlog \"joined Kubernetes\"\n");
    s
}

/// Runs the steps in order, each once; the node's single entry point.
pub fn main_script(steps: &[&str]) -> String {
    let mut s = header("run every step");
    for step in steps {
        s.push_str(&format!("\"$root{LIB_DIR}/{step}\"\n"));
    }
    s
}

/// What a k3s server is given from the user's side, as placeholders the
/// apply fills with the base64 of each DER: the cluster's server CA (so that a
/// kubeconfig can pin it before the server exists) and the certificate,
/// only, of the admin CA whose key never leaves the user's machine.
pub struct ServerSecrets {
    pub server_ca_crt: String,
    pub server_ca_key: String,
    pub admin_ca_crt: String,
}

/// k3s uses the CA files it finds in /var/lib/rancher/k3s/server/tls at
/// first start instead of making its own (https://docs.k3s.io/cli/certificate,
/// "Using Custom CA Certificates"; k3s-io/k3s#1868), one CA at a time: one
/// whose key is missing is made (rancher/rke2 discussion #7150, same code).
/// So the server CA comes from the user's side, and the client,
/// request-header and etcd CAs are made on the node and never leave it.
fn server_ca(sec: &ServerSecrets) -> String {
    format!(
        r#"tls="$root/var/lib/rancher/k3s/server/tls"
mkdir -p "$tls" "$state/k3s"
# PEM file $3 of type $1 from the base64 of its DER, $2.
pem() {{
  {{
    echo "-----BEGIN $1-----"
    printf '%s\n' "$2" | fold -w 64
    echo "-----END $1-----"
  }} > "$3"
}}
umask 077
if [ ! -e "$tls/server-ca.key" ]; then
  pem CERTIFICATE '{crt}' "$tls/server-ca.crt"
  pem "PRIVATE KEY" '{key}' "$tls/server-ca.key"
fi
pem CERTIFICATE '{admin}' "$state/k3s/admin-ca.crt"
umask 022
"#,
        crt = sec.server_ca_crt,
        key = sec.server_ca_key,
        admin = sec.admin_ca_crt,
    )
}

/// After k3s's first start made its client CA: the API server trusts it
/// and the user's admin CA (one `--client-ca-file` bundle), then restarts.
const ADMIN_CA_BUNDLE: &str = r#"for _ in $(seq 1 300); do
  [ -s "$tls/client-ca.crt" ] && break
  sleep 1
done
if [ ! -s "$tls/client-ca.crt" ]; then
  log "k3s made no client CA in 300 s; the admin kubeconfig will not authenticate"
  exit 1
fi
cat "$tls/client-ca.crt" "$state/k3s/admin-ca.crt" > "$state/k3s/client-ca-bundle.crt"
mkdir -p "$root/etc/rancher/k3s/config.yaml.d"
echo 'kube-apiserver-arg: ["client-ca-file=/var/lib/gpuform/k3s/client-ca-bundle.crt"]' \
  > "$root/etc/rancher/k3s/config.yaml.d/50-gpuform-admin-ca.yaml"
systemctl restart k3s
"#;

//! Command-line arguments (clap). Help texts teach: each command says what
//! it does, what it writes, and its exit codes.

use crate::address::Address;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// The exit-code table, as a literal so that it can be `concat!`ed.
macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0  success (with --detailed-exitcode: success and no changes)
  1  error: bad input, a failed resource, a locked or stale state
  2  with --detailed-exitcode: success and the plan has changes"
    };
}

const EXIT_CODES: &str = exit_codes!();

const RECONCILE_EXIT_CODES: &str = "Exit codes:
  0  stopped by SIGINT/SIGTERM; with --once: the pass succeeded
  1  an error (with --once: any error; without it, only one before the first pass)
  2  with --once --detailed-exitcode: the pass repaired something";

const TOP_LONG_HELP: &str = concat!(
    exit_codes!(),
    "

Environment:
  GPUFORM_TODAY=YYYY-MM-DD  pin today's date, from which price ages are counted
                            (for tests and reproducible reports; unset, the
                            system clock is used)"
);

#[derive(Debug, Parser)]
#[command(
    name = "gpuform",
    version,
    about = "Declarative, crash-safe provisioning of GPU clusters across clouds",
    long_about = "gpuform turns one YAML file describing GPU clusters (GPU model and count, nodes, pricing, \
interconnect, fabric, regions) into resources on AWS, Alibaba Cloud, Tencent Cloud, Huawei Cloud or the \
built-in sandbox, shows the difference and its cost, and applies it concurrently and safely.\n\n\
Start offline, no account needed:\n  gpuform plan examples/quickstart.yaml --sandbox\n  gpuform apply examples/quickstart.yaml --sandbox --auto-approve",
    after_help = EXIT_CODES,
    after_long_help = TOP_LONG_HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// Print nothing but results and errors.
    #[arg(long, short, global = true)]
    pub quiet: bool,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a starter spec (two one-GPU nodes and a bucket on the offline sandbox cloud).
    ///
    /// Never overwrites a file. Next: `gpuform plan FILE`, then `gpuform apply FILE`; change
    /// `cloud: sandbox` to `cloud: aws` (or alibaba, tencent, huawei) to run it on a real cloud.
    Init {
        /// Where to write the spec.
        #[arg(default_value = "gpuform.yaml")]
        file: PathBuf,
        /// The project name, which tags every resource and names the state and the buckets
        /// (default: the name of the spec's directory, made a valid project name).
        #[arg(long, value_name = "NAME")]
        project: Option<String>,
    },
    /// Check a spec: syntax, types, unknown keys, GPU models, regions and offers. Writes nothing.
    #[command(after_help = EXIT_CODES)]
    Validate {
        file: PathBuf,
        #[command(flatten)]
        vars: VarArgs,
        /// Run every cluster on the sandbox (validates against each cluster's own cloud catalog).
        #[arg(long)]
        sandbox: bool,
        /// Errors as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Rewrite specs in canonical layout (comments kept). --check only reports, as a diff.
    Fmt {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print a unified diff and exit 1 if a file is not formatted; change nothing.
        #[arg(long)]
        check: bool,
    },
    /// Show what apply would do and what it costs. Writes nothing unless --out.
    #[command(after_help = EXIT_CODES)]
    Plan(PlanArgs),
    /// Make the clouds match a spec (plans first) or a saved plan file.
    #[command(after_help = EXIT_CODES)]
    Apply(ApplyArgs),
    /// Delete everything a spec's state records, in reverse dependency order.
    #[command(after_help = EXIT_CODES)]
    Destroy(ApplyArgs),
    /// Keep a spec true after apply: repair what the clouds or people undid.
    ///
    /// Each pass (every --interval, or once with --once) takes the state lock,
    /// refreshes, plans, and applies only the changes that restore what an
    /// apply already made: a reclaimed spot node or a deleted instance made
    /// again (its volume re-attached), a detached volume, a removed rule or
    /// tag, a duplicate an interrupted run left, a cluster past its
    /// `expires_at` deleted. Changes that need review (a spec edit, a
    /// replacement, a deletion) are reported as pending: run `gpuform apply`.
    /// Repairs go through apply's journal: a reconciler killed at any instant
    /// leaves what the next pass finishes. While another run holds the lock,
    /// a reconciler waits as a standby and takes over when it is released (a
    /// killed holder's local lock at once, a remote one when its lease ends).
    /// SIGINT/SIGTERM let the running pass finish its calls and save.
    #[command(after_help = RECONCILE_EXIT_CODES)]
    Reconcile(ReconcileArgs),
    /// Show the state (or a saved plan file) in human form or as JSON.
    Show {
        /// A saved plan file; without it, the state of --state or the spec.
        plan: Option<PathBuf>,
        #[command(flatten)]
        state: StateArgs,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Print each cluster's nodes (address, id, zone, instance type, private IP) from state,
    /// as the clouds reported them at the last apply or refresh.
    Output {
        #[command(flatten)]
        state: StateArgs,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a kubeconfig for a k3s cluster gpuform made: the server's address from state, the
    /// cluster's server CA and a fresh admin client certificate from your local secret store.
    ///
    /// The credentials are made on your side by the apply that creates the server (see
    /// docs/kubernetes.md); they are never in state, plans or logs. The kubeconfig file is
    /// written owner-only (0600).
    #[command(after_help = EXIT_CODES)]
    Kubeconfig(KubeconfigArgs),
    /// Inspect or edit state: list, show, rm (forget), mv (rename).
    #[command(subcommand)]
    State(StateCommand),
    /// Print the resource dependency graph of a spec in Graphviz DOT.
    Graph {
        file: PathBuf,
        #[command(flatten)]
        vars: VarArgs,
        /// Run every cluster on the built-in sandbox cloud, mirroring its own cloud's catalog.
        #[arg(long)]
        sandbox: bool,
    },
    /// Break a state lock left by a dead process. Needs the lock id from the error message.
    ForceUnlock {
        id: String,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Operate the built-in sandbox cloud behind gpuform's back (drift tests, demos).
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Print the version.
    Version,
    /// Print shell completions (bash, zsh, fish, powershell, elvish).
    Completions { shell: clap_complete::Shell },
    /// List instance types with a GPU across all clouds and regions, cheapest GPU-hour first.
    ///
    /// A shared name (A100) lists every variant, grouped. Each price says whether it is sourced
    /// for the region, assumed (its source names no region) or an override; clouds offering the
    /// GPU without a price get the price API call that prices them. `--pricing A,B` compares
    /// every cloud side by side (`--markdown` for a report).
    Offers(super::commands::portability::OffersArgs),
    /// Monthly cost of on-demand, spot and reserved at H hours a month, and where a reservation pays.
    ///
    /// Also the one-month subscription (monthly-sub). Alibaba, Tencent and Huawei sell monthly
    /// and yearly subscriptions (包年包月) rather than AWS-style reservations: there reserved-1y
    /// is the one-year subscription and monthly-sub the one-month one, both paid for the whole
    /// term. --job-hours prices one short job with each cloud's per-second billing and minimum.
    Breakeven(super::commands::portability::BreakevenArgs),
    /// Matrix of clusters × clouds: where each cluster could run and at what cost, or why not.
    Lockin(super::commands::portability::LockinArgs),
    /// What nodes run at first boot (driver, MIG, local NVMe, Kubernetes join).
    #[command(subcommand)]
    Bootstrap(BootstrapCommand),
    /// Re-target a cluster to another cloud: prints the spec diff, cost delta and caveats; --write saves it.
    ///
    /// `bucket.KEY` moves a bucket instead: it is recreated empty on the new cloud (its name
    /// checked by that cloud's rules; COS needs --bucket-name NAME-APPID), the data does not
    /// move, and the rclone commands that copy it are printed with the storage cost change.
    Migrate(super::commands::portability::MigrateArgs),
    /// Choose GPU, node count, interconnect, pricing and region from a few facts about a workload.
    ///
    /// The guide's decision tree, each step with its reason: the GPU memory the workload needs
    /// (the formula is printed), the guide's rules (where a rule and the numbers disagree, both
    /// and the winner), options ranked by price-performance across the allowed clouds from the
    /// catalog, and `--write FILE` for the top option as a spec. On a terminal, missing --params
    /// and --task are asked for; elsewhere they are required.
    #[command(after_help = EXIT_CODES)]
    Recommend(super::commands::recommend::RecommendArgs),
    /// Everything running in some clouds and regions (not only gpuform's): owner, state,
    /// uptime, cost this month and per month, and findings. Read-only.
    ///
    /// Regions: `--cloud C --region R` (repeatable; one --cloud applies to every --region), or
    /// those of the given specs. Instances tagged with a given spec's project are `managed` when
    /// its state records them, `orphaned` when it does not (`gpuform gc SPEC` deletes those),
    /// `unknown` when no state of that project was given; `unmanaged` without gpuform tags.
    #[command(after_help = EXIT_CODES)]
    Audit(AuditArgs),
    /// Adopt GPU instances gpuform did not make (a console, a script, Terraform) into a spec and
    /// its state, without stopping them: with their data volumes, VPC/network, subnet and security
    /// group, written as clusters in the spec's words (GPU from the catalog, nodes, zone, pricing,
    /// image, disks) and recorded with their ids, so that `gpuform plan` is clean afterwards.
    ///
    /// Shows what it will write into the spec and state and which tags it adds, then asks (or
    /// --auto-approve). The only change in the cloud: gpuform's ownership tags on each resource.
    /// Refuses, changing nothing, an instance another gpuform state owns, a type the catalog does
    /// not know, a network/subnet/firewall shared by several clusters, an id that does not exist,
    /// a region without credentials. Interrupted, it finishes when run again.
    ///
    /// Example: gpuform import gpuform.yaml --cloud aws --region us-east-1 --id i-0abc --id i-0def
    #[command(after_help = EXIT_CODES)]
    Import(ImportArgs),
    /// Delete what is tagged with a spec's project but not recorded in its state (strays of
    /// interrupted applies and lost states), as a plan confirmed first. Never touches untagged
    /// resources.
    #[command(after_help = EXIT_CODES)]
    Gc(GcArgs),
    /// Live prices from each cloud's own price API, kept in a local dated cache.
    #[command(subcommand)]
    Prices(super::commands::prices::PricesCommand),
    /// Regions, zones and GPU instance type offerings from each cloud's own API, kept in the
    /// same local dated cache.
    #[command(subcommand)]
    Catalog(super::commands::catalog::CatalogCommand),
}

#[derive(Debug, Args, Clone)]
pub struct KubeconfigArgs {
    /// The spec.
    pub file: PathBuf,
    /// The cluster (its key under `clusters:`), made with `kubernetes: { mode: k3s }`.
    pub cluster: String,
    #[command(flatten)]
    pub vars: VarArgs,
    #[command(flatten)]
    pub location: StateLocation,
    /// Where to write the kubeconfig (0600); `-` prints it on stdout. Default:
    /// <project>-<cluster>.kubeconfig in the working directory.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Which address of the server to use, as state has it from the cloud: `public` (fails if
    /// none is reported), `private` (from inside the network, a VPN or a tunnel), or `auto`:
    /// public when reported, else private.
    #[arg(long, value_name = "WHICH", default_value = "auto", value_parser = ["auto", "public", "private"])]
    pub address: String,
    /// Days the admin client certificate is valid; run the command again for a new one.
    #[arg(long, value_name = "DAYS", default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=3650))]
    pub valid_days: u32,
}

#[derive(Debug, Args, Clone)]
pub struct ImportArgs {
    /// The spec to write the clusters into; made (with --project) when it does not exist.
    pub file: PathBuf,
    /// Where the instances run: aws, alibaba, tencent, huawei, or sandbox (the offline cloud).
    #[arg(long, value_name = "CLOUD")]
    pub cloud: String,
    /// The region they run in.
    #[arg(long, value_name = "REGION")]
    pub region: String,
    /// An instance to import (repeatable); each must exist.
    #[arg(long = "id", value_name = "ID")]
    pub ids: Vec<String>,
    /// A bucket to import, by its name (repeatable); each must exist in the region.
    #[arg(long = "bucket", value_name = "NAME")]
    pub buckets: Vec<String>,
    /// Import every instance and bucket with this tag (repeatable: all must match).
    #[arg(long = "tag", value_name = "KEY=VALUE")]
    pub tags: Vec<String>,
    /// Import every instance and bucket `gpuform audit` lists as unmanaged in the region.
    #[arg(long)]
    pub from_audit: bool,
    /// The cluster's name in the spec (`NAME-2`, `NAME-3`... when the instances make several
    /// clusters). Default: `imported`.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The project of a spec made by this import (default: the directory's name).
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
    /// Import without asking.
    #[arg(long)]
    pub auto_approve: bool,
    /// JSON on stdout instead of text: the import plan, and what was done.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub vars: VarArgs,
    #[command(flatten)]
    pub location: StateLocation,
}

#[derive(Debug, Args, Clone)]
pub struct GcArgs {
    #[command(flatten)]
    pub apply: ApplyArgs,
    /// Also delete what other states of this project made (another lineage: a lost state, or
    /// another workspace's live one). Without it they are listed and left alone.
    #[arg(long)]
    pub other_states: bool,
}

#[derive(Debug, Args, Clone)]
pub struct AuditArgs {
    /// Specs whose projects' states decide managed / orphaned (and whose regions, budgets and
    /// pools are audited).
    pub specs: Vec<PathBuf>,
    #[command(flatten)]
    pub vars: VarArgs,
    /// A cloud to list (aws, alibaba, tencent, huawei); one applies to every --region,
    /// several pair with the --region flags in order.
    #[arg(long = "cloud", value_name = "CLOUD")]
    pub clouds: Vec<String>,
    /// A region to list.
    #[arg(long = "region", value_name = "REGION")]
    pub regions: Vec<String>,
    /// List the built-in sandbox cloud instead.
    #[arg(long)]
    pub sandbox: bool,
    /// JSON on stdout instead of text.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// The report as Markdown, for a pull-request comment or a ticket.
    #[arg(long)]
    pub markdown: bool,
    /// CNY per USD for prices quoted in yuan (Alibaba, Tencent, Huawei); default: gpuform's built-in rate.
    #[arg(long, value_name = "RATE")]
    pub cny_per_usd: Option<f64>,
    /// Price overrides: CSV with cloud,region,instance_type,pricing,price,currency[,source,as_of].
    #[arg(long, value_name = "FILE", env = "GPUFORM_PRICES")]
    pub prices: Option<PathBuf>,
    /// State file of the (single) spec, instead of its own.
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
}

#[derive(Debug, Args, Clone, Default)]
pub struct VarArgs {
    /// Set a variable: `--var nodes=6` (overrides var files, GPUFORM_VAR_* and defaults).
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
    /// Read variables from a file (YAML map or KEY=VALUE lines).
    #[arg(long = "var-file", value_name = "FILE")]
    pub var_files: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum BootstrapCommand {
    /// Print the cloud-init document (MIME multipart) a node boots with, as
    /// the plan has it: join tokens and the k3s server's address appear as
    /// `@@GPUFORM_...@@` placeholders that only `apply` fills in.
    #[command(after_help = EXIT_CODES)]
    Show {
        /// The node, e.g. `cluster.pool.node[0]`.
        address: Address,
        /// The spec.
        file: PathBuf,
        #[command(flatten)]
        vars: VarArgs,
        /// Resolve every cluster for the sandbox (as `plan --sandbox`).
        #[arg(long)]
        sandbox: bool,
        /// Print one part: `cloud-config` (what `cloud-init schema --config-file` checks),
        /// `user-data` (yours), a step script by name (`mig.sh`, `nvme.sh`, ...) or a manifest a
        /// k3s server deploys (`gpuform-nvidia-device-plugin.yaml`, ...).
        #[arg(long, value_name = "PART")]
        part: Option<String>,
    },
}

/// Where a command's state is: the one declaration of `--state` and
/// `--state-url` for the commands that take a spec (plan, apply, destroy,
/// gc, kubeconfig). `state` subcommands declare theirs in [`StateArgs`],
/// global to the subcommand, which a flattened group cannot be.
#[derive(Debug, Args, Clone, Default)]
pub struct StateLocation {
    /// State file (default: the spec's `state.path`, else .gpuform/<project>.state.json, both relative to the spec's directory, not the working directory).
    #[arg(long, value_name = "PATH")]
    pub state: Option<PathBuf>,
    /// A remote state instead of the local file: `postgres://[user@]host[:port]/db`
    /// (password from PGPASSWORD or ~/.pgpass) or `s3://bucket/prefix?region=…`
    /// (credentials from the AWS chain). Overrides the spec's `state:`.
    #[arg(
        long,
        value_name = "URL",
        env = "GPUFORM_STATE_URL",
        hide_env_values = true
    )]
    pub state_url: Option<String>,
}

impl StateLocation {
    /// The state store this names for `loaded` (the spec's own `state:`
    /// when neither flag is given).
    pub fn store(
        &self,
        loaded: Option<&crate::spec::LoadedSpec>,
    ) -> Result<crate::state::StateStore, crate::EngineError> {
        crate::engine::state_store(loaded, self.state.as_deref(), self.state_url.as_deref())
    }
}

#[derive(Debug, Args, Clone, Default)]
pub struct StateArgs {
    /// State file (default: the spec's `state.path`, else .gpuform/<project>.state.json, both relative to the spec's directory, not the working directory).
    #[arg(long, value_name = "PATH", global = true)]
    pub state: Option<PathBuf>,
    /// A remote state instead of the local file (needs -f SPEC to name the project).
    #[arg(
        long,
        value_name = "URL",
        env = "GPUFORM_STATE_URL",
        hide_env_values = true,
        global = true
    )]
    pub state_url: Option<String>,
    /// A spec, to find its state.
    #[arg(long, short = 'f', value_name = "SPEC", global = true)]
    pub file: Option<PathBuf>,
}

/// `plan --format`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanFormat {
    Text,
    Json,
    Markdown,
}

#[derive(Debug, Args, Clone)]
pub struct PlanArgs {
    pub file: PathBuf,
    #[command(flatten)]
    pub vars: VarArgs,
    /// Run every cluster on the built-in sandbox cloud, mirroring its own cloud's catalog.
    #[arg(long)]
    pub sandbox: bool,
    #[command(flatten)]
    pub location: StateLocation,
    /// Save the plan; `gpuform apply FILE` applies exactly it, once, to this state.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// The plan as JSON on stdout (shape: docs/plan-json.md); same as `--format json`.
    #[arg(long, conflicts_with_all = ["markdown", "format"])]
    pub json: bool,
    /// The plan as a markdown pull-request comment on stdout: summary, a
    /// table per cluster with cost before → after, budget status, and the
    /// full diff collapsed; same as `--format markdown`.
    #[arg(long, conflicts_with = "format")]
    pub markdown: bool,
    /// How to print the plan: `text` (default), `json` (= --json) or
    /// `markdown` (= --markdown).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: Option<PlanFormat>,
    /// Exit 2 when there are changes, 0 when there are none.
    #[arg(long)]
    pub detailed_exitcode: bool,
    #[command(flatten)]
    pub change: ChangeArgs,
    /// Plan the deletion of everything in state.
    #[arg(long)]
    pub destroy: bool,
    /// Show each cluster's and bucket's cost line and the plan's notes even
    /// when nothing changes (a plan without changes prints its totals only).
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

/// What `plan` and `apply` both take: which changes to plan, from what,
/// at which prices.
#[derive(Debug, Args, Clone)]
pub struct ChangeArgs {
    /// Limit to an address or prefix (`cluster.trainer`, `cluster.trainer.node[3]`) and its
    /// dependencies; repeatable. One that matches nothing is an error.
    #[arg(long = "target", value_name = "ADDR")]
    pub targets: Vec<String>,
    /// Replace this resource even if nothing forces it (e.g. a node made before gpuform
    /// rendered node bootstraps, to give it its bootstrap). Repeatable.
    #[arg(long = "replace", value_name = "ADDR")]
    pub replace: Vec<Address>,
    /// Ask the providers what exists (default true); false plans from state alone.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub refresh: bool,
    /// Adopt what a lost state made: resources the clouds hold under this
    /// project's tags with the state lineage LINEAGE (which a plan names when
    /// it finds them) are recorded in this state instead of refused; a new
    /// state takes that lineage over. Without it, a plan stops rather than
    /// make a second copy of another state's resource.
    #[arg(long, value_name = "LINEAGE")]
    pub adopt_lineage: Vec<String>,
    /// CNY per USD for prices quoted in yuan (Alibaba, Tencent, Huawei); default: gpuform's built-in rate.
    #[arg(long, value_name = "RATE")]
    pub cny_per_usd: Option<f64>,
    /// Price overrides (negotiated discounts, private offers): CSV with cloud,region,instance_type,pricing,price,currency[,source,as_of].
    #[arg(long, value_name = "FILE", env = "GPUFORM_PRICES")]
    pub prices: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct ApplyArgs {
    /// A spec, or a plan file saved with `gpuform plan --out`.
    pub file: PathBuf,
    #[command(flatten)]
    pub vars: VarArgs,
    /// Run every cluster on the built-in sandbox cloud, mirroring its own cloud's catalog.
    #[arg(long)]
    pub sandbox: bool,
    #[command(flatten)]
    pub location: StateLocation,
    /// Skip the interactive confirmation (required when stdin is not a terminal).
    #[arg(long)]
    pub auto_approve: bool,
    /// Allow this apply to buy what cannot be undone: a Capacity Block (`capacity:
    /// [{block: …}]`) is paid up front and cannot be cancelled. Without it, an apply whose
    /// plan buys one stops before any call (exit 1); `--auto-approve` alone never spends.
    #[arg(long)]
    pub allow_purchase: bool,
    /// Operations in flight at once. Default: derived from the rate budgets of the providers
    /// the plan calls — for each, its burst plus its sustained rate × 10 s (the calls its budget
    /// can keep in flight), summed, at most 512. Calls never exceed a provider's rate budget,
    /// whatever N is: each waits for its provider's token bucket.
    #[arg(long, value_name = "N", value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u64).range(1..), |n| n as usize))]
    pub parallelism: Option<usize>,
    #[command(flatten)]
    pub change: ChangeArgs,
    /// The plan and the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args, Clone)]
pub struct ReconcileArgs {
    /// The spec to keep true (read again at every pass, so edits are seen).
    pub file: PathBuf,
    #[command(flatten)]
    pub vars: VarArgs,
    /// Run every cluster on the built-in sandbox cloud, mirroring its own cloud's catalog.
    #[arg(long)]
    pub sandbox: bool,
    #[command(flatten)]
    pub location: StateLocation,
    /// One pass, then exit (for cron and CI).
    #[arg(long)]
    pub once: bool,
    /// With --once: exit 2 when the pass repaired something (0: nothing to do, 1: error).
    #[arg(long, requires = "once")]
    pub detailed_exitcode: bool,
    /// Time between passes: `30s`, `5m`, `1h`.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = humantime::parse_duration)]
    pub interval: std::time::Duration,
    /// React to EC2 events at once: the URL of an SQS queue EventBridge
    /// feeds with spot interruption warnings, rebalance recommendations and
    /// state changes (`--print-event-rules` prints the rules). Between
    /// passes the queue is long-polled; an event naming an instance of this
    /// state starts a pass without waiting for the interval. A message is
    /// deleted once a pass that handled it saved state.
    #[arg(long, value_name = "QUEUE_URL", conflicts_with = "once")]
    pub events: Option<String>,
    /// Print the EventBridge rules and the SQS queue policy `--events`
    /// needs, for the regions of the spec's AWS clusters (and the queue of
    /// `--events`, when given), then exit.
    #[arg(long)]
    pub print_event_rules: bool,
    /// Also apply the changes that need review (spec edits, replacements,
    /// deletions): reconcile then keeps the spec true as a continuous
    /// `gpuform apply --auto-approve` would.
    #[arg(long)]
    pub apply_all: bool,
    /// `text`: one line per action; `json`: one JSON object per line
    /// (what, why, result, how long the pass planned before its first call).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_parser = ["text", "json"])]
    pub log_format: String,
    /// Serve Prometheus metrics (text format) on this address, e.g.
    /// `127.0.0.1:9464`: passes, errors, repairs by cause, pending review,
    /// nodes desired and running per cluster, the last success's time.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Operations in flight at once within a pass (as `apply --parallelism`).
    #[arg(long, value_name = "N", value_parser = clap::builder::TypedValueParser::map(clap::value_parser!(u64).range(1..), |n| n as usize))]
    pub parallelism: Option<usize>,
    /// CNY per USD for prices quoted in yuan (Alibaba, Tencent, Huawei); default: gpuform's built-in rate.
    #[arg(long, value_name = "RATE")]
    pub cny_per_usd: Option<f64>,
    /// Price overrides: CSV with cloud,region,instance_type,pricing,price,currency[,source,as_of].
    #[arg(long, value_name = "FILE", env = "GPUFORM_PRICES")]
    pub prices: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// List recorded addresses.
    List {
        #[command(flatten)]
        state: StateArgs,
    },
    /// Show one recorded resource.
    Show {
        address: Address,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Forget resources without deleting them. They stay in the cloud with gpuform's
    /// ownership tags, so the next apply adopts them again (and deletes them if the spec
    /// no longer asks for them); remove the `gpuform:*` tags in the cloud to detach one for good.
    Rm {
        #[arg(required = true)]
        addresses: Vec<Address>,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Rename a recorded resource (e.g. after renaming a cluster).
    Mv {
        from: Address,
        to: Address,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Push to the remote state (--state-url, GPUFORM_STATE_URL or the spec's
    /// `state:`): the local journal an interrupted apply left, and the local state
    /// file (--state, else .gpuform/<project>.state.json) if there is one: a
    /// migration from local to remote. Refuses a remote state of another lineage
    /// or a newer serial.
    Push {
        #[command(flatten)]
        state: StateArgs,
    },
    /// Copy the remote state into the local state file (--state, else
    /// .gpuform/<project>.state.json): a migration from remote back to local.
    /// Refuses to overwrite a local state of another lineage.
    Pull {
        #[command(flatten)]
        state: StateArgs,
    },
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// List everything in the sandbox cloud.
    Ls {
        #[command(flatten)]
        state: StateArgs,
        /// JSON on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Delete a resource behind gpuform's back (by id or address).
    Delete {
        target: String,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Reclaim a spot instance behind gpuform's back (by id or address), as
    /// the cloud does when it takes spot capacity back: its data volumes are
    /// detached and kept, the instance is gone. `gpuform reconcile` repairs it.
    Reclaim {
        target: String,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Change an attribute behind gpuform's back: `KEY=JSON_OR_STRING`.
    Set {
        target: String,
        assignment: String,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Remove gpuform's ownership tags from a resource behind its back (by id or address): it
    /// is then what a console or another tool made, unmanaged (`gpuform import` adopts it).
    Disown {
        target: String,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Make a capacity reservation in the sandbox's AWS account, as one is
    /// bought outside gpuform; prints its id for a cluster's
    /// `capacity: [{reservation: ID}, ...]`.
    Reserve {
        /// The instance type it holds (e.g. `p4d.24xlarge`).
        instance_type: String,
        /// The region it is in (e.g. `us-east-1`).
        #[arg(long)]
        region: String,
        /// The zone it holds the instances in (e.g. `us-east-1b`).
        #[arg(long)]
        zone: String,
        /// How many instances it holds.
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// The day it starts (`YYYY-MM-DD`, 00:00 UTC); now without.
        #[arg(long)]
        from: Option<String>,
        /// The day it ends (`YYYY-MM-DD`, 00:00 UTC); open-ended without.
        #[arg(long)]
        until: Option<String>,
        /// A tag `KEY=VALUE` (repeatable), to name it by tags.
        #[arg(long = "tag")]
        tags: Vec<String>,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Empty the sandbox cloud.
    Reset {
        #[command(flatten)]
        state: StateArgs,
    },
}

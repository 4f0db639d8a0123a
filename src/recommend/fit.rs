//! Step 1 of `gpuform recommend`: how much GPU memory a workload needs, and
//! how many nodes of an instance type hold it. Every constant is stated in
//! the output; nothing here reads the catalog.

use super::{Precision, Task};
use serde::Serialize;

/// Bytes in a GiB (GPU memory in the catalog is in GiB).
pub const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// Activation memory on top of weights, gradients and optimizer states, as a
/// fraction of them: an assumption (it depends on sequence length, batch
/// size and activation checkpointing), stated next to every result.
pub const TRAINING_ACTIVATIONS: f64 = 0.25;
/// Fine-tuning runs shorter sequences and smaller batches than pre-training.
pub const FINE_TUNING_ACTIVATIONS: f64 = 0.10;
/// Inference: CUDA context, activations and allocator fragmentation.
pub const INFERENCE_RUNTIME: f64 = 0.10;
/// Bytes per KV-cache element (fp16/bf16 cache).
pub const KV_BYTES: f64 = 2.0;
/// Layers ≈ d_model / 128 in dense transformers (7B: 4096/32, 13B: 5120/40).
pub const D_MODEL_PER_LAYER: f64 = 128.0;

/// The memory a workload needs, with the arithmetic behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryNeed {
    pub params: f64,
    /// Weights (and, for training, gradients and optimizer states) per parameter.
    pub bytes_per_param: f64,
    /// How `bytes_per_param` is made up.
    pub breakdown: String,
    /// `params × bytes_per_param`, GiB.
    pub states_gib: f64,
    /// Inference: the KV cache, GiB (0 for training).
    pub kv_cache_gib: f64,
    /// Inference: the transformer shape the KV cache is estimated from.
    pub layers: Option<u32>,
    pub d_model: Option<u32>,
    /// Activations (training) or runtime (inference), as a fraction.
    pub overhead: f64,
    pub overhead_why: String,
    /// Everything, GiB.
    pub total_gib: f64,
    /// The formula with the numbers in it.
    pub formula: String,
}

/// Bytes per parameter of weights, gradients and optimizer states.
fn training_bytes(precision: Precision) -> (f64, String) {
    match precision {
        Precision::Fp32 => (
            16.0,
            "4 (fp32 weights) + 4 (fp32 gradients) + 8 (Adam m and v, fp32)".into(),
        ),
        // Mixed precision: the optimizer keeps an fp32 master copy.
        _ => (
            16.0,
            format!(
                "2 ({p} weights) + 2 ({p} gradients) + 4 (fp32 master weights) + 8 (Adam m and v, fp32)",
                p = precision.as_str()
            ),
        ),
    }
}

/// The memory `params` parameters need for `task` at `precision`; for
/// inference, a KV cache of `context` tokens × `batch` sequences.
pub fn memory_need(
    params: f64,
    task: Task,
    precision: Precision,
    context: u32,
    batch: u32,
) -> MemoryNeed {
    match task {
        Task::Training | Task::FineTuning => {
            let (bpp, breakdown) = training_bytes(precision);
            let (overhead, why) = if task == Task::Training {
                (
                    TRAINING_ACTIVATIONS,
                    "activations of pre-training (long sequences, large batches, with activation checkpointing): an assumption, measure yours",
                )
            } else {
                (
                    FINE_TUNING_ACTIVATIONS,
                    "activations of a full-parameter fine-tune (shorter sequences, smaller batches): an assumption; LoRA/QLoRA need far less",
                )
            };
            let states = params * bpp / GIB;
            let total = states * (1.0 + overhead);
            MemoryNeed {
                params,
                bytes_per_param: bpp,
                breakdown,
                states_gib: states,
                kv_cache_gib: 0.0,
                layers: None,
                d_model: None,
                overhead,
                overhead_why: why.into(),
                total_gib: total,
                formula: format!(
                    "{} params × {bpp} B × (1 + {overhead:.2} activations) = {total:.1} GiB",
                    sci(params)
                ),
            }
        }
        Task::Inference => {
            let bpp = precision.bytes();
            let weights = params * bpp / GIB;
            let (layers, d_model) = shape(params);
            let kv = 2.0
                * f64::from(layers)
                * f64::from(d_model)
                * f64::from(context)
                * f64::from(batch)
                * KV_BYTES
                / GIB;
            let total = (weights + kv) * (1.0 + INFERENCE_RUNTIME);
            MemoryNeed {
                params,
                bytes_per_param: bpp,
                breakdown: format!("{bpp} ({} weights)", precision.as_str()),
                states_gib: weights,
                kv_cache_gib: kv,
                layers: Some(layers),
                d_model: Some(d_model),
                overhead: INFERENCE_RUNTIME,
                overhead_why: "CUDA context, activations and allocator fragmentation: an assumption".into(),
                total_gib: total,
                formula: format!(
                    "({} params × {bpp} B = {weights:.1} GiB weights + KV cache 2 × {layers} layers × {d_model} d_model × {context} tokens × {batch} sequences × {KV_BYTES} B = {kv:.1} GiB) × (1 + {INFERENCE_RUNTIME:.2} runtime) = {total:.1} GiB",
                    sci(params)
                ),
            }
        }
    }
}

/// A dense transformer's shape estimated from its size: params ≈ 12 ×
/// layers × d_model², layers ≈ d_model / 128, so d_model ≈ ∛(params × 128 /
/// 12), rounded to a multiple of 128. Without grouped-query attention: the
/// KV cache it gives is an upper bound.
pub fn shape(params: f64) -> (u32, u32) {
    let d = (params * D_MODEL_PER_LAYER / 12.0).cbrt();
    let units = (d / D_MODEL_PER_LAYER).round().max(1.0);
    let d_model = units * D_MODEL_PER_LAYER;
    (units as u32, d_model as u32)
}

/// Nodes of `gpus_per_node` × `gpu_mem_gib` that hold `need_gib`.
pub fn nodes_needed(need_gib: f64, gpus_per_node: u32, gpu_mem_gib: f64) -> u32 {
    let per_node = f64::from(gpus_per_node) * gpu_mem_gib;
    if per_node <= 0.0 {
        return u32::MAX;
    }
    // A hair of tolerance so that an exact fit is not rounded up by float error.
    let n = (need_gib / per_node - 1e-9).ceil().max(1.0);
    if n > f64::from(u32::MAX) {
        u32::MAX
    } else {
        n as u32
    }
}

/// `70e9` as `70B`, `1.3e9` as `1.3B`, `350e6` as `350M`.
pub fn sci(params: f64) -> String {
    let (v, unit) = if params >= 1e12 {
        (params / 1e12, "T")
    } else if params >= 1e9 {
        (params / 1e9, "B")
    } else if params >= 1e6 {
        (params / 1e6, "M")
    } else if params >= 1e3 {
        (params / 1e3, "K")
    } else {
        (params, "")
    };
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_of_known_sizes() {
        // ∛(7e9 × 128 / 12) = 4210.6 → 33 × 128 = 4224.
        assert_eq!(shape(7e9), (33, 4224));
        // ∛(70e9 × 128 / 12) = 9071.6 → 71 × 128 = 9088.
        assert_eq!(shape(70e9), (71, 9088));
    }

    #[test]
    fn nodes() {
        assert_eq!(nodes_needed(640.0, 8, 80.0), 1);
        assert_eq!(nodes_needed(640.1, 8, 80.0), 2);
        assert_eq!(nodes_needed(1.0, 1, 16.0), 1);
    }

    #[test]
    fn params_in_words() {
        assert_eq!(sci(70e9), "70B");
        assert_eq!(sci(1.3e9), "1.3B");
        assert_eq!(sci(350e6), "350M");
    }
}

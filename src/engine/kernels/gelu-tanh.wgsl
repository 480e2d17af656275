// GELU, tanh approximation (torch gelu(approximate='tanh'), Gemma's "gelu_pytorch_tanh"), written as
//   0.5 x (1 + tanh(z)) = x * sigmoid(2z),  z = sqrt(2/pi) (x + 0.044715 x^3)
// because tanh of a large |z| can come out NaN on some drivers, while 1 / (1 + exp(-2z)) saturates
// to 0 or 1. Shared by swiglu.wgsl, swiglu-backward.wgsl and decode-mlp.wgsl (Gemma's GeGLU on the
// fused decode path). Reference: reference/swiglu.ts geluTanh.

const GELU_K: f32 = 0.7978845608028654;

fn gelu_tanh(x: f32) -> f32 {
  let z = GELU_K * (x + 0.044715 * x * x * x);
  return x / (1.0 + exp(-2.0 * z));
}

// d/dx gelu_tanh = s + 2 x s (1 - s) dz/dx,  s = sigmoid(2z), dz/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
fn gelu_tanh_grad(x: f32) -> f32 {
  let z = GELU_K * (x + 0.044715 * x * x * x);
  let s = 1.0 / (1.0 + exp(-2.0 * z));
  return s + 2.0 * x * s * (1.0 - s) * GELU_K * (1.0 + 3.0 * 0.044715 * x * x);
}

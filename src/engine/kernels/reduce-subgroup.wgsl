// group_sum with subgroup operations (needs `enable subgroups`). Same contract as the tree version
// (reduce-tree.wgsl): the first invocation of each group of `group` consecutive invocations gets the
// sum; call from uniform control flow.
//
// Consts SGMIN / SGMAX: the adapter's subgroup size bounds (GPUAdapterInfo; 4 / 128 when unknown).
// A group that always fits in a subgroup (group <= SGMIN) is summed with an xor butterfly, no barrier;
// a group that always spans whole subgroups (group >= SGMAX) with subgroupAdd, then one value per
// subgroup through workgroup memory; anything in between with the tree. The choice is made on
// constants so barriers stay in uniform control flow. Assumes what every implementation does:
// subgroups are aligned, contiguous ranges of local_invocation_index, of a power-of-two size.

var<private> sg_lane: u32;
var<private> sg_size: u32;

fn group_sum(lid: u32, v: array<f32, BB>, group: u32) -> array<f32, BB> {
  var out = v;
  if (group == 1u) {
    return out;
  }
  if (group <= SGMIN) {
    for (var b = 0u; b < BB; b++) {
      var x = v[b];
      for (var o = group / 2u; o > 0u; o >>= 1u) {
        x += subgroupShuffleXor(x, o);
      }
      out[b] = x;
    }
    return out;
  }
  if (group < SGMAX) {
    return group_sum_tree(lid, v, group);
  }
  let sub = lid / sg_size;
  for (var b = 0u; b < BB; b++) {
    let x = subgroupAdd(v[b]);
    if (sg_lane == 0u) {
      red[sub * BB + b] = x;
    }
  }
  workgroupBarrier();
  if (lid % group == 0u) {
    for (var b = 0u; b < BB; b++) {
      var s = 0.0;
      for (var i = 0u; i < group / sg_size; i++) {
        s += red[(sub + i) * BB + b];
      }
      out[b] = s;
    }
  }
  workgroupBarrier(); // red is reused by the next call
  return out;
}

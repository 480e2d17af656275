// group_sum without subgroups: always the workgroup-memory tree (reduce-tree.wgsl).
// sg_lane / sg_size exist so kernels read the same names with and without subgroups.

var<private> sg_lane: u32 = 0u;
var<private> sg_size: u32 = 1u;

fn group_sum(lid: u32, v: array<f32, BB>, group: u32) -> array<f32, BB> {
  return group_sum_tree(lid, v, group);
}

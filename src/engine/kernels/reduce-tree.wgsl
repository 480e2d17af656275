// Sums over groups of invocations through workgroup memory. Needs consts WG (invocations) and BB
// (values per invocation). Contains barriers: call from uniform control flow only.
//
// Every invocation writes its values, then the first invocation of each group adds its group's
// entries one by one: two barriers per call instead of a tree's log2(group) + 1. Groups are at most
// 32 wide where this runs on the hot path, so the serial sum is short, and barriers are what costs
// most on software adapters (each one splits the shader into resumable pieces).

var<workgroup> red: array<f32, WG * BB>;

// Sums v over the `group` consecutive invocations lid - lid % group .. (group: a power of two dividing
// WG). The sum is returned to the first invocation of the group; the others get their own values.
fn group_sum_tree(lid: u32, v: array<f32, BB>, group: u32) -> array<f32, BB> {
  var out = v;
  if (group == 1u) {
    return out;
  }
  for (var b = 0u; b < BB; b++) {
    red[lid * BB + b] = v[b];
  }
  workgroupBarrier();
  if (lid % group == 0u) {
    for (var b = 0u; b < BB; b++) {
      var s = 0.0;
      for (var i = 0u; i < group; i++) {
        s += red[(lid + i) * BB + b];
      }
      out[b] = s;
    }
  }
  workgroupBarrier(); // red is reused by the next call
  return out;
}

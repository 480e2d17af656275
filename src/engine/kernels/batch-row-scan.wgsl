// Batch rows, found by scanning: a batch's tokens are its rows' tokens in row order (docs/engine.md
// "Shared data layouts"), and rows are few (a prefill batch), so a scan is enough. The including
// spec binds `rows: array<BatchRow>` and has `params.B`.

// The batch row of token t, and the index of that row's first token.
fn find_row(t: u32) -> vec2<u32> {
  var start = 0u;
  var r = 0u;
  loop {
    if (r + 1u >= params.B) { break; }
    let c = rows[r].count;
    if (t < start + c) { break; }
    start += c;
    r += 1u;
  }
  return vec2<u32>(r, start);
}

// The workgroup's batch row (seq, pos, count, first token), staged by one thread: read it with
// workgroupUniformLoad(&row_s) after stage_row.
var<workgroup> row_s: vec4<u32>;

fn stage_row(b: u32, tid: u32) {
  if (tid == 0u) {
    var first = 0u;
    for (var r = 0u; r < b; r++) {
      first += rows[r].count;
    }
    let row = rows[b];
    row_s = vec4<u32>(row.seq, row.pos, row.count, first);
  }
}

// The batch row of token t, and the index of that row's first token: a batch's tokens are its rows'
// tokens in row order (docs/engine.md "Shared data layouts"), and rows are few (a prefill batch), so
// a scan is enough. The including spec binds `rows: array<BatchRow>` and has `params.B`.
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

#include "trace/record_decoder.h"

#include <algorithm>
#include <cstring>

namespace jackdaw::trace {

void ExpandSysCall(const uint8_t* rec, jdw_sys_enter_record* enter, jdw_sys_exit_record* exit) {
  jdw_sys_call_record c;
  memcpy(&c, rec, sizeof(c));
  enter->hdr = c.hdr;
  enter->hdr.type = JDW_EVENT_SYS_ENTER;
  enter->hdr.size = sizeof(*enter);
  enter->body = c.body.enter;
  enter->body.reserved = 0;  // the wire record's carrier of the exit's peek
  // What sys_exit emits for a call whose exit names no object.
  exit->hdr = enter->hdr;
  exit->hdr.type = JDW_EVENT_SYS_EXIT;
  exit->hdr.ts = c.body.exit_ts;
  memset(&exit->body, 0, sizeof(exit->body));
  exit->body.nr = c.body.enter.nr;
  exit->body.obj_kind = JDW_OBJ_NONE;
  exit->body.fd = -1;
  exit->body.ret = c.body.ret;
  exit->body.peek = c.body.enter.reserved;
  exit->body.obj = 0;
}

bool ExpandRecords(const uint8_t* data, size_t len, std::vector<uint8_t>* out) {
  // A wire record too short to hold its call (the reader refuses those)
  // expands to nothing.
  auto expands = [](const jdw_record_header& h) { return h.size >= sizeof(jdw_sys_call_record); };
  size_t wire = 0, wire_bytes = 0, expanded = 0, widened = 0;
  for (size_t off = 0; off + sizeof(jdw_record_header) <= len;) {
    jdw_record_header h;
    memcpy(&h, data + off, sizeof(h));
    if (h.size < sizeof(h)) break;  // the caller checked sizes; never loop
    if (IsWireRecord(h.type)) ++wire, wire_bytes += h.size, expanded += expands(h);
    else widened += WidenedSize(h) - h.size;
    off += h.size;
  }
  if (wire == 0 && widened == 0) return false;
  out->resize(len - wire_bytes + expanded * kSysCallExpandedBytes + widened);
  uint8_t* w = out->data();
  bool sorted = true;
  uint64_t prev = 0;
  auto note = [&](uint64_t ts) {
    if (ts < prev) sorted = false;
    prev = std::max(prev, ts);
  };
  for (size_t off = 0; off + sizeof(jdw_record_header) <= len;) {
    jdw_record_header h;
    memcpy(&h, data + off, sizeof(h));
    if (h.size < sizeof(h)) break;
    if (IsWireRecord(h.type) && expands(h)) {
      jdw_sys_enter_record enter;
      jdw_sys_exit_record exit;
      ExpandSysCall(data + off, &enter, &exit);
      memcpy(w, &enter, sizeof(enter));
      memcpy(w + sizeof(enter), &exit, sizeof(exit));
      w += kSysCallExpandedBytes;
      note(enter.hdr.ts);
      note(exit.hdr.ts);
    } else if (!IsWireRecord(h.type)) {
      const size_t size = WidenedSize(h);
      memcpy(w, data + off, h.size);
      if (size != h.size) {
        memset(w + h.size, 0, size - h.size);
        jdw_record_header wide = h;
        wide.size = static_cast<uint16_t>(size);
        memcpy(w, &wide, sizeof(wide));
      }
      w += size;
      note(h.ts);
    }
    off += h.size;
  }
  if (sorted) return true;
  struct Ref {
    uint64_t ts;
    uint32_t off, size;
  };
  std::vector<Ref> refs;
  for (size_t off = 0; off < out->size();) {
    jdw_record_header h;
    memcpy(&h, out->data() + off, sizeof(h));
    refs.push_back({h.ts, static_cast<uint32_t>(off), h.size});
    off += h.size;
  }
  std::stable_sort(refs.begin(), refs.end(), [](const Ref& a, const Ref& b) { return a.ts < b.ts; });
  std::vector<uint8_t> sorted_out(out->size());
  size_t pos = 0;
  for (const Ref& r : refs) {
    memcpy(sorted_out.data() + pos, out->data() + r.off, r.size);
    pos += r.size;
  }
  out->swap(sorted_out);
  return true;
}

}  // namespace jackdaw::trace

// A trace's records merged with packet records from elsewhere (a pcap file),
// in timestamp order: the input side of `jackdaw analyze --pcap-input`, so that
// the join reads one record stream and needs no notion of where a packet
// came from.
//
// The trace's per-CPU chunks are each in their CPU's time order; the extra
// records are sorted here. A k-way merge by head timestamp hands out every
// record once. The trace is read a chunk at a time: a trace record's pointer
// stays valid until the merge has handed out records `keep` timestamp units
// newer (what the join's reorder window needs: pass its width), and through
// `at_end` (called after the last record, before the chunks are freed: the
// join's Finish() goes there); an extra record's as long as `extra` lives.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "jackdaw/abi.h"
#include "trace/trace_reader.h"

namespace jackdaw::pcap {

void ForEachRecordMerged(const trace::TraceReader& reader, std::vector<jdw_net_packet_record>& extra, uint64_t keep,
                         const std::function<void(const jdw_record_header*)>& fn,
                         const std::function<void()>& at_end = {});

// The same with packets read as the merge goes (one source per capture
// file, nullopt at its end), so a capture need not fit in memory: a source's
// records are sorted in a window of `keep` ahead of the oldest one not yet
// handed out (captures are in time order but for small disorders), and a
// record handed out stays valid, like a trace record, for `keep` newer
// units and through at_end.
using PacketSource = std::function<std::optional<jdw_net_packet_record>()>;
void ForEachRecordMerged(const trace::TraceReader& reader, const std::vector<PacketSource>& sources, uint64_t keep,
                         const std::function<void(const jdw_record_header*)>& fn,
                         const std::function<void()>& at_end = {});

}  // namespace jackdaw::pcap

// A checkpoint as the families build it: its files, whether they changed, and which weight holds
// a value that is not finite.
#include "core/base/error.hpp"
#include "core/models/decoder/decoder.hpp"

#include <algorithm>
#include <cmath>

namespace attnviz::core::decoder {

Mat Weight::storedRowsWidened(Eigen::Index first, Eigen::Index count) const {
    Mat out(count, storedCols());
    for (Eigen::Index r = 0; r < count; ++r) widenRow(source, type, storedCols(), first + r, out.row(r).data());
    return out;
}

Mat Weight::widened() const {
    Mat stored = storedRowsWidened(0, storedRows());
    if (!transposed) return stored;
    return stored.transpose();
}

Checkpoint::Checkpoint(Parts parts) : m(std::move(parts)) {}
Checkpoint::~Checkpoint() = default;

std::uint64_t Checkpoint::fileBytes() const {
    std::uint64_t bytes = 0;
    for (const auto& f : m.files) bytes += f->fileBytes();
    return bytes;
}

void Checkpoint::checkUnchanged() const {
    for (const auto& f : m.files) f->checkUnchanged();
}

bool Checkpoint::changed() const {
    return std::any_of(m.files.begin(), m.files.end(), [](const auto& f) { return f->changed(); });
}

std::vector<const Weight*> Checkpoint::weights() const {
    std::vector<const Weight*> out;
    const auto add = [&](const Weight& w) {
        if (w) out.push_back(&w);
    };
    add(m.embed);
    add(m.positions);
    add(m.tokenTypes);
    add(m.embedNormGain);
    add(m.embedNormBias);
    for (const Layer& b : m.layers) {
        add(b.norm1Gain);
        add(b.norm1Bias);
        for (std::size_t i = 0; i < b.qkv.size(); ++i) add(b.qkv[i]), add(b.qkvBias[i]);
        for (const Weight* w : {&b.qNorm, &b.kNorm, &b.outW, &b.outBias, &b.attnOutNormGain, &b.norm2Gain, &b.norm2Bias, &b.gateW,
                                &b.gateBias, &b.upW, &b.upBias, &b.downW, &b.downBias, &b.mlpOutNormGain})
            add(*w);
    }
    add(m.finalGain);
    add(m.finalBias);
    for (const Weight* w : {&m.headDense, &m.headDenseBias, &m.headNormGain, &m.headNormBias}) add(*w);
    if (!m.config.tieWordEmbeddings) add(m.lmHead);
    add(m.lmBias);
    return out;
}

void Checkpoint::explainNonFinite(const std::string& where, const std::string& problem) const {
    checkUnchanged();
    for (const Weight* w : weights()) {
        // The first index in the file's order, each row widened as the file stores it.
        const Eigen::Index rows = w->storedRows(), cols = w->storedCols();
        std::vector<float> row(static_cast<std::size_t>(cols));
        for (Eigen::Index r = 0; r < rows; ++r) {
            widenRow(w->source, w->type, cols, r, row.data());
            const auto bad = std::find_if(row.begin(), row.end(), [](float v) { return !std::isfinite(v); });
            if (bad == row.end()) continue;
            const auto c = static_cast<Eigen::Index>(bad - row.begin());
            const std::string index = rows > 1 ? "[" + std::to_string(r) + ", " + std::to_string(c) + "]" : "[" + std::to_string(c) + "]";
            const char* kind = std::isnan(*bad) ? "NaN" : (*bad > 0 ? "+inf" : "-inf");
            throw InputError(w->file + ": " + w->name, std::string("holds ") + kind + " at " + index +
                                                           ": the checkpoint's weights must be finite (is the file damaged?)");
        }
    }
    checkUnchanged();
    throw InputError(where, problem);
}

}  // namespace attnviz::core::decoder

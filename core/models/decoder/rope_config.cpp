// Rotary settings as config.json writes them (Hugging Face's modeling_rope_utils: rope_scaling in
// transformers 4, rope_parameters in 5), shared by the families' config readers.
#include "core/base/error.hpp"
#include "core/base/format.hpp"
#include "core/base/json_text.hpp"
#include "core/models/decoder/decoder_files.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace attnviz::core::decoder {

namespace {

// LongRoPE's factors: one positive number for each pair of the turned dimensions.
std::vector<double> factorList(const nlohmann::json& scaling, const char* key, int pairs, const std::string& where) {
    const auto it = scaling.find(key);
    if (it == scaling.end() || it->is_null()) throw InputError(where, std::string(key) + ": missing (longrope scaling needs it)");
    if (!it->is_array() || it->size() != static_cast<std::size_t>(pairs))
        throw InputError(where + ": " + key, "expected a list of " + std::to_string(pairs) +
                                                 " numbers (one for each pair of the turned dimensions), got " + describeJson(*it));
    std::vector<double> out;
    for (const nlohmann::json& v : *it) {
        if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
            throw InputError(where + ": " + key, "expected positive numbers, got " + describeJson(v));
        out.push_back(v.get<double>());
    }
    return out;
}

}  // namespace

Rope readRopeSettings(const nlohmann::json* scaling, double theta, const std::string& where, int positions, int originalPositions,
                      int rotaryWidth) {
    Rope rope;
    rope.theta = theta;
    if (scaling == nullptr || scaling->is_null()) return rope;
    if (!scaling->is_object()) throw InputError(where, "expected an object, got " + describeJson(*scaling));
    auto type = scaling->find("rope_type");
    if (type == scaling->end()) type = scaling->find("type");
    std::string kind = "default";
    if (type != scaling->end() && !type->is_null()) {
        if (!type->is_string()) throw InputError(where + ": rope_type", "expected a string, got " + describeJson(*type));
        kind = type->get<std::string>();
    }
    if (kind == "default") return rope;
    if (kind != "linear" && kind != "llama3" && kind != "longrope")
        throw InputError(where + ": rope_type", quoteValue(kind) +
                                                    " is not a scaling attnviz computes (default, linear, llama3, longrope); it would "
                                                    "change every position");
    if (kind == "longrope") {
        rope.scaling = RopeScaling::LongRope;
        rope.shortFactors = factorList(*scaling, "short_factor", rotaryWidth / 2, where);
        rope.longFactors = factorList(*scaling, "long_factor", rotaryWidth / 2, where);
        // Phi-3 writes original_max_position_embeddings beside rope_scaling, and its ratio to
        // max_position_embeddings is the factor; else both come from the settings.
        double factor = -1;
        if (originalPositions > 0) {
            rope.originalPositions = originalPositions;
            factor = static_cast<double>(positions) / originalPositions;
        } else {
            rope.originalPositions =
                sizeField(*scaling, "original_max_position_embeddings", kMaxPositions, where, "longrope scaling", false, positions);
            factor = numberField(*scaling, "factor", static_cast<double>(positions) / rope.originalPositions, 0, 1e6, where);
        }
        rope.factor = factor;
        // The attention factor the paper suggests, unless the settings give one: cos and sin grow
        // by it, so that the scores of a stretched context keep their spread.
        const double suggested =
            factor <= 1 ? 1.0 : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(rope.originalPositions)));
        rope.attentionFactor = numberField(*scaling, "attention_factor", suggested, 0, 1e6, where);
        return rope;
    }
    rope.factor = numberField(*scaling, "factor", -1, 0, 1e6, where);
    if (rope.factor < 0) throw InputError(where, "factor: missing (" + kind + " scaling divides the frequencies by it)");
    if (kind == "linear") {
        rope.scaling = RopeScaling::Linear;
        return rope;
    }
    rope.scaling = RopeScaling::Llama3;
    const auto need = [&](const char* field) {
        if (scaling->find(field) == scaling->end()) throw InputError(where, std::string(field) + ": missing (llama3 scaling needs it)");
    };
    need("low_freq_factor");
    need("high_freq_factor");
    rope.lowFreqFactor = numberField(*scaling, "low_freq_factor", 1, 0, 1e6, where);
    rope.highFreqFactor = numberField(*scaling, "high_freq_factor", 4, 0, 1e6, where);
    if (!(rope.highFreqFactor > rope.lowFreqFactor))
        throw InputError(where + ": high_freq_factor",
                         formatNumber(rope.highFreqFactor) + " is not above low_freq_factor " + formatNumber(rope.lowFreqFactor));
    // transformers 5 takes max_position_embeddings when the original length is not given.
    rope.originalPositions =
        sizeField(*scaling, "original_max_position_embeddings", kMaxPositions, where, "llama3 scaling", false, positions);
    return rope;
}

}  // namespace attnviz::core::decoder

#include "core/export.hpp"

#include "core/error.hpp"
#include "core/files.hpp"
#include "core/format.hpp"
#include "core/npy.hpp"
#include "core/scenario.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <filesystem>

namespace attnviz::core {
namespace {

std::string csvField(const std::string& text) {
    if (text.find_first_of(",\"\r\n") == std::string::npos && !text.empty() && text.front() != ' ' && text.back() != ' ')
        return text;
    std::string out(1, '"');
    for (char c : text) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
    return out;
}

std::string labelsText(const std::vector<std::string>& labels) {
    std::string out;
    for (const auto& l : labels) {
        for (char c : l) out += (c == '\n' ? ' ' : c);
        out += '\n';
    }
    return out;
}

void writePretty(const nlohmann::json& j, int depth, std::string& out) {
    const std::string pad(static_cast<std::size_t>(2 * (depth + 1)), ' ');
    const std::string closePad(static_cast<std::size_t>(2 * depth), ' ');
    if (j.is_object() && !j.empty()) {
        out += "{\n";
        std::size_t n = 0;
        for (const auto& item : j.items()) {
            out += pad + nlohmann::json(item.key()).dump() + ": ";
            writePretty(item.value(), depth + 1, out);
            out += ++n < j.size() ? ",\n" : "\n";
        }
        out += closePad + "}";
        return;
    }
    const bool flat = j.is_array() && std::none_of(j.begin(), j.end(), [](const nlohmann::json& v) { return v.is_structured(); });
    if (!j.is_array() || flat) {
        out += j.dump();
        return;
    }
    out += "[\n";
    for (std::size_t i = 0; i < j.size(); ++i) {
        out += pad;
        writePretty(j[i], depth + 1, out);
        out += i + 1 < j.size() ? ",\n" : "\n";
    }
    out += closePad + "]";
}

}  // namespace

std::string prettyJson(const nlohmann::json& j) {
    std::string out;
    writePretty(j, 0, out);
    out += "\n";
    return out;
}

nlohmann::json exportJson(const Model& model, const Forward& forward) {
    nlohmann::json j;
    j["tokens"] = model.queryTokens;
    j["key_tokens"] = model.keyTokens;
    j["X"] = model.explicitQkv ? nlohmann::json(nullptr) : matrixToJson(model.x);
    nlohmann::json heads = nlohmann::json::array();
    for (const HeadTensors& h : forward.heads) {
        heads.push_back({{"Q", matrixToJson(h.q)},
                         {"K", matrixToJson(h.k)},
                         {"V", matrixToJson(h.v)},
                         {"scores", matrixToJson(h.scores)},
                         {"weights", matrixToJson(h.weights)},
                         {"output", matrixToJson(h.output)}});
    }
    j["heads"] = std::move(heads);
    j["output"] = matrixToJson(forward.output);
    return j;
}

void exportNpyDir(const std::string& dir, const Model& model, const Forward& forward) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) throw InputError(dir, "exists and is not a folder");
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir, "cannot create the folder: " + ec.message());
    const auto path = [&](const char* name) { return (fs::path(dir) / name).string(); };
    const auto stack = [&](auto member) {
        std::vector<const Mat*> ms;
        for (const HeadTensors& h : forward.heads) ms.push_back(&(h.*member));
        return encodeNpy(stackTensor(ms));
    };
    if (!model.explicitQkv) writeFileAtomic(path("X.npy"), encodeNpy(matrixTensor(model.x)));
    writeFileAtomic(path("Q.npy"), stack(&HeadTensors::q));
    writeFileAtomic(path("K.npy"), stack(&HeadTensors::k));
    writeFileAtomic(path("V.npy"), stack(&HeadTensors::v));
    writeFileAtomic(path("scores.npy"), stack(&HeadTensors::scores));
    writeFileAtomic(path("weights.npy"), stack(&HeadTensors::weights));
    writeFileAtomic(path("head_output.npy"), stack(&HeadTensors::output));
    writeFileAtomic(path("output.npy"), encodeNpy(matrixTensor(forward.output)));
    writeFileAtomic(path("tokens.txt"), labelsText(model.queryTokens));
    writeFileAtomic(path("key_tokens.txt"), labelsText(model.keyTokens));
}

std::string weightsCsv(const Model& model, const MatRef& weights) {
    std::string out = "query\\key";
    for (const auto& k : model.keyTokens) {
        out += ',';
        out += csvField(k);
    }
    out += "\n";
    for (Eigen::Index i = 0; i < weights.rows(); ++i) {
        out += csvField(model.queryTokens[static_cast<std::size_t>(i)]);
        for (Eigen::Index j = 0; j < weights.cols(); ++j) {
            char buffer[32];
            const auto r = std::to_chars(buffer, buffer + sizeof buffer, weights(i, j));
            out += ',';
            out.append(buffer, r.ptr);
        }
        out += "\n";
    }
    return out;
}

}  // namespace attnviz::core

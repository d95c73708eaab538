// Direct logit attribution as a figure: a layers × heads grid of each head's term on a two-sided
// colour scale (0 white), the layer's W_O bias (where the model has one) and MLP in columns of
// their own, the embeddings' term above, each cell's value written in it. PNG and SVG.
#pragma once

#include "core/models/decoder/attribution.hpp"

#include <string>

namespace attnviz::render {

struct AttributionFigure {
    core::decoder::LogitAttribution terms;
    std::string title, subtitle;
};

// A term as a cell writes it: "0" below 0.005, else two decimals (one from 10, none from 100).
std::string attributionValueText(double v);

// The file for OUT.png or OUT.svg (chosen by the extension); InputError names the path, or the
// attribution when it is empty or holds a term that is not a finite number.
std::string encodeAttribution(const std::string& path, const AttributionFigure& figure);

}  // namespace attnviz::render

// The HTML page (html_page.h): the skeleton of userspace/report/html/page.html with
// its title, style, data and script put in.
#include "report/html_page.h"

#include <utility>
#include <vector>

#include "html_assets.h" // generated from userspace/report/html/ by the Makefile

namespace usdtprof {

namespace {

std::string escape_html(const std::string &text)
{
	std::string out;
	for (char c : text) {
		switch (c) {
		case '&': out += "&amp;"; break;
		case '<': out += "&lt;"; break;
		case '>': out += "&gt;"; break;
		case '"': out += "&quot;"; break;
		default: out += c;
		}
	}
	return out;
}

// JSON that cannot end its <script> element nor open a comment in it: '<', '>'
// and '&' only occur inside strings, where \u escapes mean the same.
std::string json_for_script(const nlohmann::ordered_json &data)
{
	std::string text = data.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
	std::string out;
	out.reserve(text.size() + text.size() / 16);
	for (char c : text) {
		if (c == '<')
			out += "\\u003c";
		else if (c == '>')
			out += "\\u003e";
		else if (c == '&')
			out += "\\u0026";
		else
			out += c;
	}
	return out;
}

// The template with each marker replaced by its value, markers given in the
// order they appear: only the template is searched, never what was put in.
std::string fill(const std::string &page, const std::vector<std::pair<std::string, std::string>> &values)
{
	std::string out;
	size_t from = 0;
	for (const auto &[marker, value] : values) {
		size_t at = page.find(marker, from);
		if (at == std::string::npos)
			continue;
		out += page.substr(from, at - from) + value;
		from = at + marker.size();
	}
	return out + page.substr(from);
}

} // namespace

std::string html_page(const std::string &title, const nlohmann::ordered_json &data)
{
	return fill(kHtmlPage, {{"{{TITLE}}", escape_html(title)}, {"{{CSS}}", kHtmlCss},
				 {"{{DATA}}", json_for_script(data)}, {"{{JS}}", kHtmlJs}});
}

} // namespace usdtprof

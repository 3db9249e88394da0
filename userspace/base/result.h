// Recoverable errors as values; UserError is the one fatal error type, caught in main.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <variant>

namespace usdtprof {

struct Error {
	std::string message; // one line, for the user
};

template <class T> class Result {
public:
	Result(T value) : v_(std::move(value)) {}
	Result(Error error) : v_(std::move(error)) {}

	bool ok() const { return v_.index() == 0; }
	explicit operator bool() const { return ok(); }
	T &value() { return std::get<0>(v_); }
	const T &value() const { return std::get<0>(v_); }
	T &operator*() { return value(); }
	T *operator->() { return &value(); }
	const Error &error() const { return std::get<1>(v_); }

private:
	std::variant<T, Error> v_;
};

template <> class Result<void> {
public:
	Result() = default;
	Result(Error error) : error_(std::move(error)), ok_(false) {}

	bool ok() const { return ok_; }
	explicit operator bool() const { return ok_; }
	const Error &error() const { return error_; }

private:
	Error error_;
	bool ok_ = true;
};

// A fatal user error: main prints its one line and exits with exit_code.
class UserError : public std::runtime_error {
public:
	explicit UserError(const std::string &what, int exit_code = 1)
		: std::runtime_error(what), exit_code_(exit_code) {}
	int exit_code() const { return exit_code_; }

private:
	int exit_code_;
};

} // namespace usdtprof

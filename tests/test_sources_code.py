"""Code source: items and edges from real snippets in every supported language."""

from __future__ import annotations

import textwrap

import pytest

from smartcontext.model import ITEM_KINDS, ParsedFile
from smartcontext.sources.code import language_for_path, module_name_for_path, parse_code


def parse(path: str, code: str) -> ParsedFile:
    return parse_code(path, textwrap.dedent(code).lstrip("\n").encode("utf-8"))


def by_qual(parsed: ParsedFile) -> dict:
    out = {}
    for item in parsed.items:
        out.setdefault(item.qualname, item)
    return out


def edges(parsed: ParsedFile, kind: str, src: str | None = None) -> set:
    return {
        e.dst_name or e.dst
        for e in parsed.edges
        if e.kind == kind and (src is None or e.src == src)
    }


def line_of(code: str, line: str) -> int:
    """1-based number of the first line of ``code`` (as parsed) equal to ``line``."""
    return textwrap.dedent(code).lstrip("\n").split("\n").index(line) + 1


def check_invariants(parsed: ParsedFile) -> None:
    ids = [item.id for item in parsed.items]
    assert len(ids) == len(set(ids)), "item ids must be unique"
    known = set(ids)
    for item in parsed.items:
        assert item.kind in ITEM_KINDS
        assert 1 <= item.start_line <= item.end_line
        assert item.path == parsed.path
        assert item.parent_id is None or item.parent_id in known
    for edge in parsed.edges:
        assert edge.src in known
        assert (edge.dst is None) != (edge.dst_name is None)
        if edge.kind == "contains":
            assert edge.dst in known


# -- paths -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"), ("b.pyi", "python"), ("x.mjs", "javascript"), ("x.cjs", "javascript"),
        ("x.jsx", "javascript"), ("x.ts", "typescript"), ("x.tsx", "typescript"), ("m.go", "go"),
        ("m.rs", "rust"), ("M.java", "java"), ("m.c", "c"), ("m.h", "c"), ("m.cc", "cpp"),
        ("m.cpp", "cpp"), ("m.cxx", "cpp"), ("m.hpp", "cpp"), ("m.hh", "cpp"), ("m.cs", "csharp"),
        ("m.rb", "ruby"), ("m.php", "php"), ("m.kt", "kotlin"), ("m.swift", "swift"),
        ("m.scala", "scala"), ("README.md", None), ("Makefile", None), (".py", None), ("X.PY", "python"),
    ],
)
def test_language_for_path(path, language):
    assert language_for_path(path) == language


@pytest.mark.parametrize(
    ("path", "module"),
    [
        ("pkg/mod.py", "pkg.mod"),
        ("pkg/sub/__init__.py", "pkg.sub"),
        ("src/pkg/mod.py", "pkg.mod"),
        ("lib/pkg/__init__.py", "pkg"),
        ("src/__init__.py", "src"),
        ("setup.py", "setup"),
        ("pkg/stubs.pyi", "pkg.stubs"),
        ("web/app/main.ts", "web.app.main"),
        ("src/net/tcp.rs", "src.net.tcp"),
        ("include/buf.h", "include.buf"),
    ],
)
def test_module_name_for_path(path, module):
    assert module_name_for_path(path) == module


# -- Python ----------------------------------------------------------------------------

PY_MODULE = '''
"""Billing helpers.

Computes invoices.
"""
from __future__ import annotations

import os
import json.decoder as jd
from typing import Optional
from . import rates
from .tax import vat, duty as d
from ..core.models import Customer

__all__ = ["Invoice", "total"]
__all__ += ["Line"]


def total(lines,
          discount: float = 0.0,
          ) -> float:  # money
    """Sum the lines.

    Details:
        Indented detail.
    """
    amount = sum_lines(lines)
    return apply_discount(amount, discount) + len(lines)


@dataclass(frozen=True)
@registry.register
class Invoice(Base, models.Model, Generic[T], metaclass=Meta):
    """An invoice."""

    class Line:
        def render(self):
            return self.fmt()

    def __init__(self, customer):
        self.customer = customer
        self.validate()

    @property
    def amount(self):
        return self._compute()

    @amount.setter
    def amount(self, value):
        self._amount = value

    async def send(self, mailer):
        await mailer.deliver(self)

        def retry():
            return self.send(mailer) and helper()

        return retry

    def _compute(self):
        return total(self.lines)


def total(x):
    return x
'''


@pytest.fixture(scope="module")
def py() -> ParsedFile:
    return parse("src/billing/invoice.py", PY_MODULE)


def test_python_module_item(py):
    module = py.items[0]
    assert module.id == "src/billing/invoice.py"
    assert module.kind == "module"
    assert module.qualname == "billing.invoice"
    assert module.name == "invoice"
    assert module.docstring == "Billing helpers.\n\nComputes invoices."
    assert module.start_line == 1 and module.end_line == PY_MODULE.lstrip("\n").count("\n")
    assert module.text.startswith('"""Billing helpers.')
    assert module.meta["exports"] == ["Invoice", "total", "Line"]
    assert module.language == "python"
    assert py.warnings == []
    check_invariants(py)


def test_python_functions_and_multiline_signature(py):
    fn = by_qual(py)["total"]
    assert fn.id == "src/billing/invoice.py::total"
    assert fn.kind == "function"
    assert fn.signature == (
        "def total(lines,\n          discount: float = 0.0,\n          ) -> float:"
    )
    assert fn.docstring == "Sum the lines.\n\nDetails:\n    Indented detail."
    assert fn.start_line == line_of(PY_MODULE, "def total(lines,")
    assert fn.end_line == line_of(PY_MODULE, "    return apply_discount(amount, discount) + len(lines)")
    assert fn.text.startswith("def total(lines,") and fn.text.rstrip().endswith("+ len(lines)")
    assert fn.parent_id == "src/billing/invoice.py"
    assert fn.meta["async"] is False and fn.meta["decorators"] == []


def test_python_duplicate_names_get_line_suffix(py):
    totals = [i for i in py.items if i.qualname == "total"]
    assert [i.id for i in totals] == [
        "src/billing/invoice.py::total",
        f"src/billing/invoice.py::total@{totals[1].start_line}",
    ]
    setters = [i for i in py.items if i.qualname == "Invoice.amount"]
    assert len(setters) == 2 and setters[1].id.endswith(f"::Invoice.amount@{setters[1].start_line}")


def test_python_class_decorators_bases_and_docstring(py):
    cls = by_qual(py)["Invoice"]
    assert cls.kind == "class"
    assert cls.signature == "@dataclass(frozen=True)\n@registry.register\nclass Invoice(Base, models.Model, Generic[T], metaclass=Meta):"
    assert cls.text.startswith("@dataclass(frozen=True)")
    assert cls.start_line == line_of(PY_MODULE, "@dataclass(frozen=True)")
    assert cls.end_line == line_of(PY_MODULE, "        return total(self.lines)")
    assert cls.docstring == "An invoice."
    assert cls.meta["decorators"] == ["dataclass(frozen=True)", "registry.register"]
    assert cls.meta["bases"] == ["Base", "models.Model", "Generic"]
    assert edges(py, "inherits", cls.id) == {"Base", "models.Model", "Generic"}


def test_python_methods_nested_classes_and_functions(py):
    q = by_qual(py)
    base = "src/billing/invoice.py::"
    assert q["Invoice.Line"].kind == "class" and q["Invoice.Line"].parent_id == base + "Invoice"
    assert q["Invoice.Line.render"].kind == "method"
    assert q["Invoice.Line.render"].parent_id == base + "Invoice.Line"
    init = q["Invoice.__init__"]
    assert init.kind == "method" and init.parent_id == base + "Invoice"
    assert init.signature == "def __init__(self, customer):"
    assert init.meta["visibility"] == "public"
    assert q["Invoice._compute"].meta["visibility"] == "private"
    retry = q["Invoice.send.retry"]
    assert retry.kind == "function" and retry.parent_id == base + "Invoice.send"
    contains = {(e.src, e.dst) for e in py.edges if e.kind == "contains"}
    assert (base.rstrip(":"), base + "Invoice") in contains
    assert (base + "Invoice", base + "Invoice.send") in contains
    assert (base + "Invoice.send", base + "Invoice.send.retry") in contains
    assert (base + "Invoice.Line", base + "Invoice.Line.render") in contains


def test_python_async_and_properties(py):
    q = by_qual(py)
    send = q["Invoice.send"]
    assert send.meta["async"] is True
    assert send.signature == "async def send(self, mailer):"
    getter = q["Invoice.amount"]
    assert getter.meta["property"] is True and getter.signature == "@property\ndef amount(self):"
    setter = [i for i in py.items if i.qualname == "Invoice.amount"][1]
    assert setter.meta["property"] is True and setter.meta["decorators"] == ["amount.setter"]
    assert q["Invoice._compute"].meta["property"] is False


def test_python_imports_absolute_and_relative(py):
    assert edges(py, "imports", "src/billing/invoice.py") == {
        "os", "json.decoder", "typing", "typing.Optional",
        "billing", "billing.rates",
        "billing.tax", "billing.tax.vat", "billing.tax.duty",
        "core.models", "core.models.Customer",
    }


def test_python_relative_imports_from_package_init():
    parsed = parse(
        "src/app/api/__init__.py",
        """
        from . import routes
        from .views import index
        from .. import config
        from ...toolong import x
        """,
    )
    assert edges(parsed, "imports") == {
        "app.api", "app.api.routes", "app.api.views", "app.api.views.index",
        "app", "app.config", "toolong", "toolong.x",
    }
    assert parsed.items[0].qualname == "app.api" and parsed.items[0].name == "api"


def test_python_calls_resolve_self_to_class_and_skip_builtins(py):
    base = "src/billing/invoice.py::"
    assert edges(py, "calls", base + "total") == {"sum_lines", "apply_discount"}
    assert edges(py, "calls", base + "Invoice.__init__") == {"Invoice.validate"}
    assert edges(py, "calls", base + "Invoice.amount") == {"Invoice._compute"}
    assert edges(py, "calls", base + "Invoice.Line.render") == {"Invoice.Line.fmt"}
    assert edges(py, "calls", base + "Invoice.send") == {"deliver"}
    # A nested function still sees ``self`` of the enclosing method's class.
    assert edges(py, "calls", base + "Invoice.send.retry") == {"Invoice.send", "helper"}
    assert edges(py, "calls", base + "Invoice._compute") == {"total"}
    # Decorator calls belong to the definition they decorate.
    assert "dataclass" in edges(py, "calls", base + "Invoice")


def test_python_calls_are_deduplicated():
    parsed = parse(
        "m.py",
        """
        class C:
            def run(self):
                go(); go(); self.step(); self.step(); cls.step()
                print(len([]))
                items.append(1)
        """,
    )
    calls = [e.dst_name for e in parsed.edges if e.kind == "calls" and e.src == "m.py::C.run"]
    assert sorted(calls) == ["C.step", "go"]


def test_python_cls_call_builds_the_class():
    parsed = parse(
        "m.py",
        """
        class Money:
            @classmethod
            def zero(cls):
                return cls(_("0"))
        """,
    )
    assert edges(parsed, "calls", "m.py::Money.zero") == {"Money"}


def test_python_module_level_calls_come_from_module():
    parsed = parse("cli.py", 'def main():\n    pass\n\nif __name__ == "__main__":\n    main()\n')
    assert edges(parsed, "calls", "cli.py") == {"main"}


def test_python_item_text_keeps_indentation_block():
    parsed = parse(
        "m.py",
        """
        class A:
            # note, not a docstring
            def f(self):
                '''Doc.'''
                return 1
        """,
    )
    f = by_qual(parsed)["A.f"]
    assert f.text == "    def f(self):\n        '''Doc.'''\n        return 1"
    assert f.docstring == "Doc."
    assert f.start_line == 3 and f.end_line == 5


# -- JavaScript / TypeScript -----------------------------------------------------------

JS_CODE = """
// Cart component helpers.
import React, { useState } from 'react';
import { format, parse as p } from './util/money.js';
import * as api from "../api";
const lodash = require('lodash');
const local = require('./local');
const lazyPage = () => import('./pages/lazy');

/** Adds two numbers. */
export function add(a, b) {
  return format(a) + b;
}

export const mul = async (a, b) => compute(a, b);

export default class Cart extends Base {
  // Build a cart.
  constructor(items) {
    super(items);
    this.refresh();
  }
  static empty() { return new Cart([]); }
  onClick = () => { this.refresh(); track('click'); };
  get size() { return this.items.length; }
}
"""


def test_javascript():
    parsed = parse("web/cart/index.js", JS_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    assert parsed.items[0].qualname == "web.cart.index"
    assert parsed.items[0].docstring == "Cart component helpers."
    add = q["add"]
    assert add.kind == "function" and add.docstring == "Adds two numbers."
    assert add.signature == "export function add(a, b)"
    assert add.text.startswith("/** Adds two numbers. */\nexport function add")
    assert add.meta["exported"] is True
    mul = q["mul"]
    assert mul.kind == "function" and mul.meta["async"] is True
    assert mul.signature == "export const mul = async (a, b) =>"
    cart = q["Cart"]
    assert cart.kind == "class" and cart.meta["default_export"] is True
    assert edges(parsed, "inherits", cart.id) == {"Base"}
    assert q["Cart.constructor"].kind == "method" and q["Cart.constructor"].docstring == "Build a cart."
    assert q["Cart.empty"].meta["static"] is True
    assert q["Cart.onClick"].kind == "method" and q["Cart.onClick"].parent_id == cart.id
    assert q["Cart.size"].meta["property"] is True
    assert edges(parsed, "imports") == {
        "react", "web.cart.util.money", "web.cart.util.money.format", "web.cart.util.money.parse",
        "web.api", "lodash", "web.cart.local", "web.cart.pages.lazy",
    }
    assert edges(parsed, "calls", "web/cart/index.js::Cart.constructor") == {"Cart.refresh"}
    assert edges(parsed, "calls", "web/cart/index.js::Cart.onClick") == {"Cart.refresh", "track"}
    assert edges(parsed, "calls", "web/cart/index.js::Cart.empty") == {"Cart"}
    assert edges(parsed, "calls", "web/cart/index.js::add") == {"format"}
    assert parsed.items[0].meta["exports"] == ["add", "mul", "Cart"]


def test_javascript_commonjs_and_prototype_methods():
    parsed = parse(
        "lib/widget.js",
        """
        'use strict';
        /** Widget constructor. */
        function Widget(el) { this.el = el; }
        /** Renders it. */
        Widget.prototype.render = function (opts) { this.clear(); draw(opts); };
        module.exports.create = (el) => new Widget(el);
        """,
    )
    check_invariants(parsed)
    q = by_qual(parsed)
    render = q["Widget.render"]
    assert render.kind == "method" and render.parent_id == q["Widget"].id
    assert render.docstring == "Renders it."
    assert render.signature == "Widget.prototype.render = function (opts)"
    assert edges(parsed, "calls", render.id) == {"Widget.clear", "draw"}
    assert q["create"].meta["exported"] is True
    assert edges(parsed, "calls", q["create"].id) == {"Widget"}


TS_CODE = """
import type { User } from '../models/user';
import { Injectable } from '@angular/core';

/** Something with an area. */
export interface Shape extends Named, Sized<number> {
  area(): number;
}

export abstract class Square<T> extends Rect<T> implements Shape, Printable {
  private side = 2;
  public area(): number {
    return this.side * scale(2);
  }
  protected abstract describe(): string;
}

export enum Color { Red, Green }
type Id = string | number;

export const fetchUser = async (id: Id): Promise<User> => {
  return await http.get(`/users/${id}`);
};

export default function main(): void {
  new Square();
}

namespace Geometry {
  export function origin() { return 0; }
}
"""


def test_typescript():
    parsed = parse("src/shapes.ts", TS_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    shape = q["Shape"]
    assert shape.kind == "class" and shape.meta["type_kind"] == "interface"
    assert shape.docstring == "Something with an area."
    assert shape.signature == "export interface Shape extends Named, Sized<number>"
    assert edges(parsed, "inherits", shape.id) == {"Named", "Sized"}
    square = q["Square"]
    assert edges(parsed, "inherits", square.id) == {"Rect", "Shape", "Printable"}
    area = q["Square.area"]
    assert area.kind == "method" and area.meta["visibility"] == "public"
    assert area.signature == "public area(): number"
    assert edges(parsed, "calls", area.id) == {"scale"}
    assert q["Color"].meta["type_kind"] == "enum"
    assert q["Id"].meta["type_kind"] == "type"
    fetch = q["fetchUser"]
    assert fetch.kind == "function" and fetch.meta["async"] is True
    assert fetch.signature == "export const fetchUser = async (id: Id): Promise<User> =>"
    main = q["main"]
    assert main.meta["default_export"] is True and edges(parsed, "calls", main.id) == {"Square"}
    assert "Geometry.origin" in q
    # ``../models/user`` from ``src/shapes.ts`` leaves ``src``.
    assert edges(parsed, "imports") == {"models.user", "models.user.User", "@angular/core"}


def test_tsx_uses_jsx_grammar():
    parsed = parse(
        "ui/Button.tsx",
        """
        export function Button({ label }: { label: string }) {
          return <button onClick={() => handle(label)}>{label}</button>;
        }
        """,
    )
    assert parsed.warnings == []
    assert parsed.language == "typescript"
    assert edges(parsed, "calls", "ui/Button.tsx::Button") == {"handle"}


# -- Go ------------------------------------------------------------------------------

GO_CODE = """
// Package server runs the HTTP API.
package server

import (
	"fmt"
	nethttp "net/http"
	"github.com/acme/shop/internal/store"
)

// Server serves requests.
type Server struct {
	Base
	*store.Conn
	addr string
}

// Handler handles one request.
type Handler interface {
	Serve(w nethttp.ResponseWriter) error
}

// Start listens on addr.
func (s *Server) Start(port int) error {
	s.listen(port)
	fmt.Println("started")
	return store.Open(s.addr)
}

func NewServer(addr string) *Server {
	return &Server{addr: addr}
}
"""


def test_go():
    parsed = parse("internal/server/server.go", GO_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    module = parsed.items[0]
    assert module.docstring == "Package server runs the HTTP API." and module.meta["package"] == "server"
    server = q["Server"]
    assert server.kind == "class" and server.meta["type_kind"] == "struct"
    assert server.signature == "type Server struct" and server.docstring == "Server serves requests."
    assert edges(parsed, "inherits", server.id) == {"Base", "store.Conn"}
    assert q["Handler"].meta["type_kind"] == "interface"
    start = q["Server.Start"]
    assert start.kind == "method" and start.name == "Start"
    assert start.parent_id == server.id
    assert start.signature == "func (s *Server) Start(port int) error"
    assert start.docstring == "Start listens on addr."
    assert edges(parsed, "calls", start.id) == {"Server.listen", "Open"}
    assert q["NewServer"].kind == "function" and q["NewServer"].meta["visibility"] == "public"
    assert edges(parsed, "imports") == {"fmt", "net/http", "github.com/acme/shop/internal/store"}
    contains = {(e.src, e.dst) for e in parsed.edges if e.kind == "contains"}
    assert (server.id, start.id) in contains


def test_go_method_of_type_in_another_file_stays_in_module():
    parsed = parse("srv/extra.go", "package srv\n\nfunc (s Server) Stop() { s.close() }\n")
    stop = by_qual(parsed)["Server.Stop"]
    assert stop.kind == "method" and stop.parent_id == "srv/extra.go"
    assert edges(parsed, "calls", stop.id) == {"Server.close"}


# -- Rust ----------------------------------------------------------------------------

RUST_CODE = """
//! Geometry primitives.
use std::collections::HashMap;
use crate::units::{Meters, convert::to_feet};
use super::shapes::*;
use serde::Serialize as Ser;

/// A point in space.
#[derive(Debug, Clone)]
pub struct Point {
    x: f64,
}

/// Something with an area.
pub trait Area {
    fn area(&self) -> f64;
    fn double(&self) -> f64 { self.area() * 2.0 }
}

impl Point {
    /// Makes a point.
    pub fn new(x: f64) -> Self {
        Self::check(x);
        Point { x }
    }
    fn check(x: f64) {}
}

impl Area for Point {
    fn area(&self) -> f64 { self.norm() + helper(1) }
}

pub fn distance(a: &Point, b: &Point) -> f64 {
    to_feet(a.x - b.x)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn it_works() { distance(&Point::new(1.0), &Point::new(2.0)); }
}
"""


def test_rust():
    parsed = parse("src/geo/point.rs", RUST_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    assert parsed.items[0].docstring == "Geometry primitives."
    point = q["Point"]
    assert point.kind == "class" and point.meta["type_kind"] == "struct"
    assert point.docstring == "A point in space."
    assert point.text.startswith("/// A point in space.\n#[derive(Debug, Clone)]")
    assert point.signature == "#[derive(Debug, Clone)] pub struct Point"
    assert point.meta["visibility"] == "pub"
    assert q["Area"].meta["type_kind"] == "trait"
    assert q["Area.double"].kind == "method" and q["Area.double"].parent_id == q["Area"].id
    new = q["Point.new"]
    assert new.kind == "method" and new.parent_id == point.id and new.docstring == "Makes a point."
    assert new.signature == "pub fn new(x: f64) -> Self"
    assert edges(parsed, "calls", new.id) == {"Point.check"}
    trait_impl = [i for i in parsed.items if i.qualname == "Point.area"]
    assert len(trait_impl) == 1 and trait_impl[0].parent_id == point.id
    assert edges(parsed, "calls", trait_impl[0].id) == {"Point.norm", "helper"}
    assert edges(parsed, "inherits", point.id) == {"Area"}
    assert q["distance"].kind == "function"
    assert q["tests.it_works"].kind == "function"
    assert edges(parsed, "imports") == {
        "std.collections.HashMap", "src.units.Meters", "src.units.convert.to_feet",
        "src.geo.shapes", "serde.Serialize", "src.geo.point",
    }


# -- Java ----------------------------------------------------------------------------

JAVA_CODE = """
package com.acme.shop;

import java.util.List;
import static java.lang.Math.max;
import com.acme.base.*;

/**
 * An order placed by a customer.
 *
 * @author shop
 */
@Entity
public class Order extends BaseEntity implements Serializable, Comparable<Order> {
    private final List<Line> lines;

    /** Creates an order. */
    public Order(List<Line> lines) {
        super();
        this.lines = lines;
        this.validate();
    }

    @Override
    public int compareTo(Order other) {
        return Integer.compare(total(), other.total());
    }

    static class Line {}
}

interface Repository<T> extends CrudRepository<T>, Auditable {
    T find(long id);
}
"""


def test_rust_impl_of_type_from_another_file():
    parsed = parse("src/ext.rs", "impl Display for Meters {\n    fn fmt(&self) { self.write(); }\n}\n")
    fmt = by_qual(parsed)["Meters.fmt"]
    assert fmt.kind == "method" and fmt.parent_id == "src/ext.rs"
    assert edges(parsed, "calls", fmt.id) == {"Meters.write"}
    assert edges(parsed, "inherits") == set()  # no item of Meters here to carry the edge


def test_java():
    parsed = parse("src/main/java/com/acme/shop/Order.java", JAVA_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    assert parsed.items[0].meta["package"] == "com.acme.shop"
    order = q["Order"]
    assert order.docstring == "An order placed by a customer.\n\n@author shop"
    assert order.signature == (
        "@Entity public class Order extends BaseEntity implements Serializable, Comparable<Order>"
    )
    assert order.meta["visibility"] == "public" and order.meta["annotations"] == ["Entity"]
    assert edges(parsed, "inherits", order.id) == {"BaseEntity", "Serializable", "Comparable"}
    ctor = q["Order.Order"]
    assert ctor.kind == "method" and ctor.docstring == "Creates an order."
    assert edges(parsed, "calls", ctor.id) == {"Order.validate"}
    compare = q["Order.compareTo"]
    assert compare.meta["annotations"] == ["Override"]
    assert edges(parsed, "calls", compare.id) == {"compare", "total"}
    assert q["Order.Line"].parent_id == order.id
    repo = q["Repository"]
    assert repo.meta["type_kind"] == "interface"
    assert edges(parsed, "inherits", repo.id) == {"CrudRepository", "Auditable"}
    assert "Repository.find" not in q  # bodiless interface methods stay in the interface text
    assert edges(parsed, "imports") == {"java.util.List", "java.lang.Math.max", "com.acme.base"}


# -- C / C++ -------------------------------------------------------------------------

C_CODE = """
/* Ring buffer. */
#include <stdio.h>
#include "util/log.h"
#include "../common.h"

/* A ring. */
typedef struct ring {
    char *data;
    int len;
} ring_t;

struct node { int v; };

/* Pushes one byte. */
static int
ring_push(ring_t *r,
          char c)
{
    log_debug("push");
    r->ops->flush(r);
    return 0;
}

int main(void) { return ring_push(NULL, 'a'); }
"""


def test_c():
    parsed = parse("src/ring/ring.c", C_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    assert parsed.items[0].docstring == "Ring buffer."
    ring = q["ring"]
    assert ring.kind == "class" and ring.meta["type_kind"] == "struct" and ring.meta["typedef"] == "ring_t"
    assert ring.docstring == "A ring." and ring.signature == "typedef struct ring"
    assert q["node"].kind == "class"
    push = q["ring_push"]
    assert push.kind == "function" and push.docstring == "Pushes one byte."
    assert push.signature == "static int ring_push(ring_t *r, char c)"
    assert push.meta["visibility"] == "private"
    assert edges(parsed, "calls", push.id) == {"log_debug", "flush"}
    assert edges(parsed, "calls", q["main"].id) == {"ring_push"}
    assert edges(parsed, "imports") == {"stdio", "src.ring.util.log", "src.common"}


def test_c_header_keeps_prototypes():
    parsed = parse(
        "include/ring.h",
        """
        #ifndef RING_H
        #define RING_H
        /** Creates a ring. */
        ring_t *ring_new(int size);
        int ring_len(const ring_t *r);
        #endif
        """,
    )
    q = by_qual(parsed)
    assert parsed.language == "c"
    assert q["ring_new"].docstring == "Creates a ring." and q["ring_new"].meta["declaration"] is True
    assert q["ring_new"].signature == "ring_t *ring_new(int size);"
    assert "ring_len" in q


CPP_CODE = """
#include "shape.hpp"

namespace geo {

/// A circle.
class Circle : public Shape, private virtual Base<int> {
public:
    explicit Circle(double r) : r_(r) {}
    double area() const override { return kPi * sq(r_) * this->scale(); }
    ~Circle();
private:
    double r_;
};

template <typename T>
T twice(T x) { return x + x; }

double Circle::perimeter() const { return 2 * kPi * r_; }

}  // namespace geo
"""


def test_cpp():
    parsed = parse("src/geo/circle.cpp", CPP_CODE)
    check_invariants(parsed)
    q = by_qual(parsed)
    circle = q["geo.Circle"]
    assert circle.kind == "class" and circle.docstring == "A circle."
    assert circle.signature == "class Circle : public Shape, private virtual Base<int>"
    assert edges(parsed, "inherits", circle.id) == {"Shape", "Base"}
    area = q["geo.Circle.area"]
    assert area.kind == "method" and area.parent_id == circle.id
    assert edges(parsed, "calls", area.id) == {"sq", "geo.Circle.scale"}
    perimeter = q["geo.Circle.perimeter"]
    assert perimeter.kind == "method" and perimeter.parent_id == circle.id
    assert q["geo.twice"].kind == "function"
    assert q["geo.twice"].signature == "template <typename T> T twice(T x)"
    assert edges(parsed, "imports") == {"src.geo.shape"}


def test_cpp_header_with_h_extension_and_declarations():
    parsed = parse(
        "include/shape.h",
        """
        #pragma once
        namespace geo {
        class Shape {
        public:
            /// Area of the shape.
            virtual double area() const = 0;
            int sides() const { return n_; }
        };
        }
        """,
    )
    assert parsed.language == "cpp" and parsed.warnings == []
    q = by_qual(parsed)
    assert q["geo.Shape.area"].kind == "method" and q["geo.Shape.area"].docstring == "Area of the shape."
    assert q["geo.Shape.sides"].parent_id == q["geo.Shape"].id


# -- other languages -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "code", "expected_quals", "method", "calls", "bases", "imports"),
    [
        (
            "App/Order.cs",
            """
            using System.Text;
            namespace Acme.Shop {
              /// <summary>An order.</summary>
              public class Order : Entity, IOrder {
                public int Total(int x) { return this.Sum(x) + Helper(x); }
              }
            }
            """,
            {"Acme.Shop.Order", "Acme.Shop.Order.Total"}, "Acme.Shop.Order.Total",
            {"Acme.Shop.Order.Sum", "Helper"}, {"Entity", "IOrder"}, {"System.Text"},
        ),
        (
            "lib/shop/order.rb",
            """
            require 'json'
            require_relative 'line'
            module Shop
              class Order < Base
                # Sums the lines.
                def total(x)
                  helper(x)
                  self.sum
                end
              end
            end
            """,
            {"Shop", "Shop.Order", "Shop.Order.total"}, "Shop.Order.total",
            {"helper", "Shop.Order.sum"}, {"Base"}, {"json", "lib.shop.line"},
        ),
        (
            "app/Models/User.php",
            """
            <?php
            namespace App\\Models;
            use Illuminate\\Support\\Str;
            /** A user. */
            class User extends Model implements Auth {
                public function name(): string { return $this->format(helper()); }
            }
            """,
            {"User", "User.name"}, "User.name", {"User.format", "helper"}, {"Model", "Auth"},
            {"Illuminate.Support.Str"},
        ),
        (
            "src/User.kt",
            """
            package com.acme
            import kotlin.math.max
            class User(val name: String) : Base(), Named {
                fun greet(x: Int): String { return helper(x) + this.other() }
            }
            """,
            {"User", "User.greet"}, "User.greet", {"helper", "User.other"}, {"Base", "Named"},
            {"kotlin.math.max"},
        ),
        (
            "Sources/User.swift",
            """
            import Foundation
            /// A user.
            class User: Base, Named {
                func greet() { self.other(); helper() }
            }
            """,
            {"User", "User.greet"}, "User.greet", {"User.other", "helper"}, {"Base", "Named"},
            {"Foundation"},
        ),
        (
            "src/User.scala",
            """
            package acme
            import scala.collection.mutable.Map
            class User(name: String) extends Base with Named {
              def greet(x: Int): String = helper(x) + this.other()
            }
            """,
            {"User", "User.greet"}, "User.greet", {"helper", "User.other"}, {"Base", "Named"},
            {"scala.collection.mutable.Map"},
        ),
    ],
    ids=["csharp", "ruby", "php", "kotlin", "swift", "scala"],
)
def test_other_languages(path, code, expected_quals, method, calls, bases, imports):
    parsed = parse(path, code)
    check_invariants(parsed)
    q = by_qual(parsed)
    assert expected_quals <= set(q)
    assert q[method].kind == "method"
    assert edges(parsed, "calls", q[method].id) == calls
    class_id = q[method].parent_id
    assert edges(parsed, "inherits", class_id) == bases
    assert edges(parsed, "imports") == imports


def test_ruby_doc_comment_of_first_method():
    parsed = parse("a.rb", "class A\n  # Says hi.\n  def hi; end\nend\n")
    assert by_qual(parsed)["A.hi"].docstring == "Says hi."


# -- robustness ------------------------------------------------------------------------


def test_unknown_language_becomes_text_item():
    parsed = parse_code("notes/data.xyz", b"just some\ntext\n")
    assert len(parsed.items) == 1
    item = parsed.items[0]
    assert item.kind == "text" and item.id == "notes/data.xyz"
    assert item.start_line == 1 and item.end_line == 2 and item.text == "just some\ntext\n"
    assert parsed.edges == [] and len(parsed.warnings) == 1 and "unknown language" in parsed.warnings[0]


def test_language_without_grammar_becomes_text_item():
    parsed = parse_code("x.cob", b"IDENTIFICATION DIVISION.\n", language="cobol")
    assert [i.kind for i in parsed.items] == ["text"]
    assert "no grammar for cobol" in parsed.warnings[0]


def test_syntax_errors_keep_recovered_definitions():
    parsed = parse(
        "broken.py",
        """
        def good(a):
            return a

        def broken(:
            pass

        class Fine:
            def ok(self):
                return 1
        """,
    )
    check_invariants(parsed)
    q = by_qual(parsed)
    assert {"good", "Fine", "Fine.ok"} <= set(q)
    assert len(parsed.warnings) == 1 and "syntax errors" in parsed.warnings[0]


def test_invalid_utf8_keeps_exact_lines():
    source = b"# caf\xe9 \xff\xfe\ndef first():\n    return '\xc3\x28'\n\n\ndef second():\n    pass\n"
    parsed = parse_code("enc.py", source)
    check_invariants(parsed)
    q = by_qual(parsed)
    assert (q["first"].start_line, q["first"].end_line) == (2, 3)
    assert (q["second"].start_line, q["second"].end_line) == (6, 7)
    assert "\ufffd" in q["first"].text
    assert parsed.items[0].text.count("\n") == source.count(b"\n")


def test_multibyte_text_slices_by_bytes():
    parsed = parse("u.py", "s = 'ünïcödé 😀'\n\ndef f():\n    return 'π'\n")
    f = by_qual(parsed)["f"]
    assert f.text == "def f():\n    return 'π'" and f.start_line == 3


@pytest.mark.parametrize("ext", sorted({"py", "js", "ts", "tsx", "go", "rs", "java", "c", "h", "cpp", "cs", "rb", "php", "kt", "swift", "scala"}))
def test_garbage_bytes_never_raise(ext):
    garbage = [
        b"",
        b"\x00\x01\x02\xff\xfe" * 50,
        bytes(range(256)) * 8,
        b"{{{{((((([[[[" * 200,
        b"class def fn func impl struct } ) ] ;;; \xff\n" * 30,
    ]
    for data in garbage:
        parsed = parse_code(f"g/file.{ext}", data)
        check_invariants(parsed)
        assert parsed.items[0].id == f"g/file.{ext}"
        assert parsed.items[0].kind in ("module", "text")


def test_empty_python_file():
    parsed = parse_code("pkg/__init__.py", b"")
    assert [(i.kind, i.qualname, i.start_line, i.end_line) for i in parsed.items] == [("module", "pkg", 1, 1)]
    assert parsed.warnings == [] and parsed.edges == []


def test_minified_code_keeps_signatures_short():
    params = ", ".join(f"a{i} = {{k: [1, 2, 3]}}" for i in range(200))
    parsed = parse_code("dist/app.js", f"function big({params}) {{ return a0; }}".encode())
    big = by_qual(parsed)["big"]
    assert big.signature.startswith("function big(a0 = {k: [1, 2, 3]}") and len(big.signature) <= 602


def test_ids_unique_with_many_redefinitions():
    code = "\n".join(["def f(): pass"] * 5 + ["def f(): pass; def g(): pass"])
    parsed = parse_code("dup.py", code.encode())
    check_invariants(parsed)
    assert sum(1 for i in parsed.items if i.qualname == "f") == 6

# executor-node/python/warm.py — the data-science zygote's warm-up (module _snakepit_warm).
#
# Importing numpy, pandas, scipy, matplotlib, sklearn & co. is not enough: they import and build
# much lazily (formatters, parsers, estimators' submodules, the font cache, each savefig
# backend, PIL's format plugins, threadpoolctl's view of the BLAS), and a child can neither read
# those files nor afford the time. So the zygote runs their common paths once, in a private
# directory, before forking any child — then undoes what that left in global state, so that no
# job inherits the warm-up's seaborn theme, logging handlers or random stream. Compiled into
# snakepit-zygote with runner.py; runner.prepare calls warm() for profiles with figures.
import io
import os
import shutil
import tempfile
import warnings


def _core():
    """numpy, pandas, scipy, matplotlib and sympy."""
    import numpy as np
    import pandas as pd
    import matplotlib.pyplot as plt
    import sympy
    from scipy import stats, optimize, linalg, integrate, interpolate  # noqa: F401
    a = np.arange(12.0).reshape(3, 4)
    repr(a), str(a), a.tolist(), np.linalg.solve(np.eye(3) * 2, np.ones(3)), np.linalg.inv(np.eye(2))
    np.random.default_rng(1).normal(size=4), np.fft.fft(np.ones(4)), np.percentile(a, 50)
    df = pd.DataFrame({"k": ["a", "b", "a"], "v": [1.0, 2.0, 3.0],
                       "t": pd.date_range("2024-01-01", periods=3)})
    g = df.groupby("k")["v"].agg(["sum", "mean"])
    repr(df), str(g), df.describe(), df.to_string(), df.to_dict(), df.to_json(), df.to_html()
    text = df.to_csv(index=False)
    pd.read_csv(io.StringIO(text)), pd.read_json(io.StringIO(df.to_json()))
    df.pivot_table(index="k", values="v"), df.merge(df, on="k"), df.sort_values("v"), df["t"].dt.day
    pd.Series([1, 2, None]).fillna(0).rolling(2).mean(), pd.to_datetime(["2024-01-02"])
    stats.norm.cdf(1.0), stats.ttest_ind([1, 2, 3], [2, 3, 4]), stats.linregress([1, 2, 3], [2, 4, 7])
    optimize.minimize(lambda x: (x[0] - 1) ** 2, [0.0]), optimize.brentq(lambda x: x - 1, 0, 2)
    integrate.quad(lambda x: x * x, 0, 1), linalg.lu(np.eye(3))
    x = sympy.symbols("x")
    e = sympy.integrate(sympy.sin(x) ** 2, x)
    str(e), sympy.latex(e), sympy.pretty(e), sympy.solve(x ** 2 - 4, x), sympy.simplify(e.diff(x))
    sympy.sympify("x**2 + 1"), sympy.Matrix([[1, 2], [3, 4]]).det(), sympy.N(sympy.pi, 20)
    sympy.lambdify(x, sympy.sin(x), "numpy")(1.0), sympy.lambdify(x, x ** 2, "math")(2.0)
    sympy.series(sympy.exp(x), x, 0, 4), sympy.limit(sympy.sin(x) / x, x, 0), sympy.factor(x ** 2 - 1)
    sympy.nsolve(x ** 2 - 2, x, 1), sympy.dsolve(sympy.Function("f")(x).diff(x) - 1)
    sympy.integrate(1 / (1 + x ** 2), (x, 0, 1)), sympy.integrate(sympy.exp(-x ** 2), (x, -sympy.oo, sympy.oo))
    sympy.solve([x + 1 - 2 * x], [x]), sympy.Rational(1, 3) + sympy.Rational(1, 6), sympy.expand((x + 1) ** 3)
    np.polyfit([0, 1, 2], [1, 3, 5], 1), stats.gaussian_kde([1.0, 2.0, 3.0])(2.0)
    pd.cut(df["v"], 2), pd.crosstab(df["k"], df["v"] > 1), df.set_index("t").resample("D").sum()
    df.plot.bar(x="k", y="v"), df["v"].plot.hist(), pd.plotting.scatter_matrix(df[["v"]])
    fig, ax = plt.subplots()
    ax.plot([0, 1, 2], [1, 0, 2], label="line")
    ax.scatter([0, 1], [1, 0])
    ax.bar(["a", "b"], [1, 2])
    ax.hist([1, 2, 2, 3])
    ax.set_title("Warm-up: àéü Δ $x^2$")
    ax.set_xlabel("x")
    ax.legend()
    fig.tight_layout()
    for fmt in ("png", "svg", "pdf", "jpg"):  # the writers load their backends lazily
        fig.savefig(io.BytesIO(), format=fmt)
    df.plot(x="t", y="v")
    fig2 = plt.figure()
    fig2.add_subplot(projection="3d")
    for f in plt.get_fignums():
        plt.figure(f).savefig(io.BytesIO(), format="png")
    plt.close("all")


def _learning():
    """scikit-learn, statsmodels: estimators import their submodules at first use,
    the first KMeans builds threadpoolctl's controller (which runs ldconfig and dlopens the BLAS:
    impossible in a child), the toy data sets are read from the package."""
    import numpy as np
    import pandas as pd
    import statsmodels.api as sm
    import statsmodels.formula.api as smf
    from sklearn.cluster import DBSCAN, KMeans
    from sklearn.compose import ColumnTransformer
    from sklearn.datasets import load_iris, make_classification, make_regression
    from sklearn.decomposition import PCA
    from sklearn.ensemble import GradientBoostingClassifier, RandomForestClassifier
    from sklearn.linear_model import LinearRegression, LogisticRegression, Ridge
    from sklearn.metrics import accuracy_score, classification_report, confusion_matrix, r2_score
    from sklearn.model_selection import GridSearchCV, cross_val_score, train_test_split
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import Pipeline, make_pipeline
    from sklearn.preprocessing import LabelEncoder, MinMaxScaler, OneHotEncoder, StandardScaler
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier
    from statsmodels.tsa.arima.model import ARIMA
    rng = np.random.default_rng(0)
    X = rng.random((60, 3))
    y = (X[:, 0] > .5).astype(int)
    train_test_split(X, y, test_size=0.25, random_state=0)
    LinearRegression().fit(X, X @ [1.0, 2.0, 3.0]).score(X, X @ [1.0, 2.0, 3.0])
    for model in (LogisticRegression(max_iter=200), RandomForestClassifier(n_estimators=5),
                  DecisionTreeClassifier(), KNeighborsClassifier(), SVC(),
                  GradientBoostingClassifier(n_estimators=5)):
        p = model.fit(X, y).predict(X)
    accuracy_score(y, p), classification_report(y, p), confusion_matrix(y, p), r2_score(y, p)
    KMeans(n_clusters=2, n_init=2, random_state=0).fit(X), DBSCAN().fit(X), PCA(2).fit_transform(X)
    df = pd.DataFrame({"a": np.arange(30.0), "b": list("xyz") * 10, "y": np.arange(30.0) * 2})
    ct = ColumnTransformer([("n", StandardScaler(), ["a"]), ("c", OneHotEncoder(handle_unknown="ignore"), ["b"])])
    Pipeline([("ct", ct), ("m", Ridge())]).fit(df[["a", "b"]], df["y"])
    cross_val_score(make_pipeline(MinMaxScaler(), Ridge()), df[["a"]], df["y"], cv=3)
    GridSearchCV(Ridge(), {"alpha": [0.1, 1.0]}, cv=3).fit(df[["a"]], df["y"])
    LabelEncoder().fit_transform(df["b"])
    load_iris(as_frame=True), make_classification(n_samples=20), make_regression(n_samples=20)
    fit = sm.OLS(df["y"], sm.add_constant(df["a"])).fit()
    fit.summary().as_text(), fit.params
    smf.ols("y ~ a + C(b)", data=df).fit().summary()
    s = pd.Series(np.sin(np.arange(48.0)), index=pd.date_range("2020-01-01", periods=48, freq="MS"))
    ARIMA(s, order=(1, 0, 0)).fit().forecast(3)
    sm.tsa.seasonal_decompose(s, period=12), sm.tsa.stattools.adfuller(s)


def _plots_and_files():
    """seaborn, PIL, openpyxl, networkx, bs4/lxml, PyYAML, tabulate: seaborn's
    plots, every PIL format plugin and its font and WebP modules, openpyxl's writer and reader
    (and pandas' Excel I/O), networkx's layout and drawing, the four bs4 parsers."""
    import matplotlib.pyplot as plt
    import networkx as nx
    import numpy as np
    import pandas as pd
    import seaborn as sns
    import yaml
    from bs4 import BeautifulSoup
    from lxml import etree, html
    from openpyxl import Workbook, load_workbook
    from openpyxl.styles import Font
    from PIL import Image, ImageDraw, ImageEnhance, ImageFilter, ImageFont, ImageOps
    from tabulate import tabulate
    df = pd.DataFrame({"x": np.arange(30.0), "y": np.arange(30.0) ** .5, "g": list("ab") * 15})
    sns.set_theme()
    for plot in (lambda: sns.histplot(df["y"], kde=True), lambda: sns.scatterplot(data=df, x="x", y="y", hue="g"),
                 lambda: sns.heatmap(df[["x", "y"]].corr(), annot=True, cmap="coolwarm"),
                 lambda: sns.lineplot(data=df, x="x", y="y"), lambda: sns.barplot(data=df, x="g", y="y"),
                 lambda: sns.boxplot(data=df, x="g", y="y"), lambda: sns.regplot(data=df, x="x", y="y"),
                 lambda: sns.countplot(data=df, x="g"), lambda: sns.violinplot(data=df, x="g", y="y")):
        plt.figure()
        plot()
    sns.pairplot(df, hue="g"), sns.relplot(data=df, x="x", y="y", col="g")
    G = nx.karate_club_graph()
    nx.shortest_path(G, 0, 33), nx.pagerank(G), nx.betweenness_centrality(G)
    plt.figure()
    nx.draw(G, pos=nx.spring_layout(G, seed=1), with_labels=True)
    for n in plt.get_fignums():
        plt.figure(n).savefig(io.BytesIO(), format="png")
    plt.close("all")
    Image.init()  # every format plugin: Image.open tries them all
    im = Image.new("RGB", (64, 48), "white")
    d = ImageDraw.Draw(im)
    d.rectangle([4, 4, 20, 20], fill="red")
    d.text((5, 25), "hi", fill="black", font=ImageFont.load_default())
    ImageFont.truetype("DejaVuSans.ttf", 12)
    for fmt in ("PNG", "JPEG", "BMP", "GIF", "WEBP", "TIFF"):
        b = io.BytesIO()
        im.save(b, format=fmt)
        Image.open(io.BytesIO(b.getvalue())).load()
    ImageOps.grayscale(im.resize((32, 24)).rotate(45).filter(ImageFilter.BLUR))
    ImageEnhance.Contrast(im).enhance(1.5), im.getexif()
    im.save("a.png"), Image.open("a.png").load()
    wb = Workbook()
    wb.active.append(["a", "b"])
    wb.active["A1"].font = Font(bold=True)
    wb.save("t.xlsx")
    list(load_workbook("t.xlsx").active.iter_rows(values_only=True))
    df.to_excel("p.xlsx", index=False), pd.read_excel("p.xlsx"), pd.read_excel("p.xlsx", sheet_name=None)
    h = "<html><body><p class='x'>caf\u00e9 <a href='/u'>l</a></p></body></html>"
    for parser in ("html.parser", "lxml", "lxml-xml", "xml"):
        s = BeautifulSoup(h, parser)
        s.find_all("a"), s.select("p.x a"), s.get_text(), s.prettify()
    etree.tostring(etree.fromstring(b"<r><a x='1'>t</a></r>").xpath("//a")[0])
    html.fromstring("<p>hi <b>x</b></p>").text_content()
    yaml.safe_dump(yaml.safe_load("a: 1\nb: [x, y]\nc: {d: 2024-01-01}\n")), yaml.dump({"a": 1})
    tabulate([[1, "a"]], headers=["n", "s"], tablefmt="github"), df.head(2).to_markdown()
    np.savez("z.npz", a=np.arange(3)), np.load("z.npz")["a"]


def _no_downloads():
    """The data-set downloaders need the internet, which a sandbox never has: they fail at
    once with a message that says so, instead of a security violation halfway through."""
    import seaborn
    import sklearn.datasets

    def offline(name):
        def refuse(*args, **kwargs):
            raise ConnectionError("%s downloads its data from the internet, and the sandbox has "
                                  "no network: pass the data in the `files` argument instead" % name)
        return refuse

    seaborn.load_dataset = offline("seaborn.load_dataset")
    for name in dir(sklearn.datasets):
        if name.startswith("fetch_"):
            setattr(sklearn.datasets, name, offline("sklearn.datasets." + name))


def _undo():
    """What the warm-up left in global state that a job would otherwise inherit."""
    import logging
    import matplotlib
    import numpy as np
    matplotlib.rcParams.update(_rc_saved[0])
    loggers = [logging.root] + [l for l in logging.Logger.manager.loggerDict.values()
                                if isinstance(l, logging.Logger)]
    for logger in loggers:
        for h in list(logger.handlers):
            logger.removeHandler(h)
    logging.root.setLevel(logging.WARNING)
    # numpy's global random state would be the same in every child (CPython reseeds only its
    # own random at fork): each child draws a fresh seed from the kernel
    os.register_at_fork(after_in_child=np.random.seed)


_rc_saved = [None]


def warm():
    import matplotlib
    matplotlib.use("Agg")
    _rc_saved[0] = dict(matplotlib.rcParams)
    home = os.getcwd()
    scratch = tempfile.mkdtemp(prefix="snakepit-warm-")
    try:
        os.chdir(scratch)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the warm-up's own deprecation chatter
            _core()
            _learning()
            _plots_and_files()
    finally:
        os.chdir(home)
        shutil.rmtree(scratch, ignore_errors=True)
    _no_downloads()
    _undo()
    cache = os.environ.pop("MPLCONFIGDIR", None)
    if cache and os.path.basename(cache).startswith("snakepit-mpl-"):
        shutil.rmtree(cache, ignore_errors=True)
